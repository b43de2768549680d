// Package watchdog ends what the probe and hostprobe commands started when
// the command itself is killed (SIGKILL from a CI timeout, the OOM killer),
// on Linux: not only the child it ran, which its parent-death signal ends,
// but a wrapper's descendants too (the server a shell ran, a daemon that
// left the group with setsid), which would otherwise be adopted by init and
// run on.
//
// Start re-executes the running binary (/proc/self/exe) as a watchdog in a
// session and process group of its own, so that a signal to the command's
// group does not take it. The watchdog reads a pipe whose write end only
// the command holds (close-on-exec: no child inherits it). The command puts
// a marker of its own in its environment, which every process it starts
// inherits, and tells the watchdog, at each look (a few times a second),
// the process groups its children lead and every process descended from
// it. When the pipe ends without Close's "done" (the command died), the
// watchdog kills (SIGKILL) every told process group that still holds a
// marked process, every told process (by pidfd, so never a reused pid) and
// every running process whose environment carries the marker, then exits.
//
// What it cannot end: a process that both cleared its environment (or is
// another user's, or setuid, whose environment cannot be read) and left
// the command's tree and its children's process groups before the
// command's last look. It serves the two commands only: the library
// (mcptest, assertions in a user's test binary) does not start it.
package watchdog

// roleEnv, set in the watchdog's environment to the marker (KEY=1), is what
// makes the re-executed binary a watchdog (Serve).
const roleEnv = "MCPSTDIO_WATCHDOG"
