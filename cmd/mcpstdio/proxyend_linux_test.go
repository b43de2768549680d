package main

// The reproductions of issue 19 that need the built command: a proxy that
// must end whatever the host does, and must never keep the user's server
// from running. Linux: they use sh, yes, FIONREAD and /proc.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// poll waits for cond, which no event announces, checking every 10ms up
// to the test's bound.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound(t))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, bound(t))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unread returns the bytes waiting in the pipe whose read end is f.
func unread(f *os.File) int {
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ) // FIONREAD
	if err != nil {
		return -1
	}
	return n
}

// hostNeverReads starts `mcpstdio args...` with stdin from /dev/null (or
// kept open, if openStdin) and stdout on a pipe the test never reads: a
// host that has stopped reading.
func hostNeverReads(t *testing.T, openStdin bool, args ...string) (cmd *exec.Cmd, stdout *os.File, stderr *bytes.Buffer, done chan error) {
	// done gets the command's end once; the cleanup waits on exited.
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound(t))
	t.Cleanup(cancel)
	cmd = exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(os.Environ(), "MCPSTDIO_STATE_DIR="+t.TempDir(), "TMPDIR="+t.TempDir())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cmd.Stdout = w
	stderr = &bytes.Buffer{}
	cmd.Stderr = stderr
	if openStdin {
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { in.Close() })
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done = make(chan error, 1)
	exited := make(chan struct{})
	go func() { done <- cmd.Wait(); close(exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd, r, stderr, done
}

// ended waits for the proxy to end within limit and returns its exit
// status and how long it took.
func ended(t *testing.T, done chan error, limit time.Duration, stderr *bytes.Buffer) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	select {
	case err := <-done:
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, time.Since(start)
	case <-time.After(limit):
		t.Fatalf("the proxy did not end within %v\nstderr:\n%s", limit, stderr)
		return 0, 0
	}
}

// TestProxyEndsHostNotReading (issue 19.1): SIGTERM while the host has
// stopped reading stdout: the server dies at once, and the proxy ends
// ExitGrace later with the server's status, its blocked write interrupted.
func TestProxyEndsHostNotReading(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("yes"); err != nil {
		t.Skip("no yes here")
	}
	const grace = 500 * time.Millisecond
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	cmd, out, stderr, done := hostNeverReads(t, false, "proxy", "-log", log, "-exit-grace", grace.String(), "--", "yes")
	// The host's pipe is full: the proxy's write to it is blocked.
	poll(t, "the host's stdout pipe full", func() bool { return unread(out) >= 64<<10 })
	cmd.Process.Signal(syscall.SIGTERM)
	code, took := ended(t, done, bound(t), stderr)
	t.Logf("ended %v after SIGTERM (exit grace %v)", took, grace)
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d, want the server's, %d", code, 128+int(syscall.SIGTERM))
	}
	// The documented bound: ExitGrace after the server's exit, and the
	// time a loaded machine takes to run the proxy's goroutines.
	if limit := grace + 3*time.Second; took > limit {
		t.Errorf("ended %v after SIGTERM, over ExitGrace (%v) + 3s", took, grace)
	}
	evs := readRecord(t, log)
	var why string
	for _, e := range evs {
		if e.Ev == "close" && e.Dir == "out" && why == "" {
			why = e.Text
		}
	}
	if !strings.Contains(why, "the host is not reading its stdout") || evs[len(evs)-1].Ev != "summary" {
		t.Errorf("the record ends with %s and says %q about stdout; want a summary and the host named as not reading", evs[len(evs)-1].Ev, why)
	}
}

// TestProxySecondSignal (issue 19.2): the server exits on the first
// SIGTERM while a process it started holds its stdout; a second SIGTERM
// ends the proxy at once.
func TestProxySecondSignal(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, _, stderr, done := hostNeverReads(t, true, "proxy", "-no-log", "-exit-grace", "1m", "--", "sh", "-c", "sleep 30 & echo $! >"+pidFile+"; exec cat")
	poll(t, "the server's child", func() bool { b, _ := os.ReadFile(pidFile); return len(bytes.TrimSpace(b)) > 0 })
	b, _ := os.ReadFile(pidFile)
	if child, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil {
		t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	}
	poll(t, "the server running cat", func() bool { return procHasChild(cmd.Process.Pid, "cat") })
	cmd.Process.Signal(syscall.SIGTERM)
	// The server (cat) is gone when the proxy's status says so; nothing
	// announces it to the test: wait for cat's pid to go from /proc.
	poll(t, "the server gone", func() bool { return !procHasChild(cmd.Process.Pid, "cat") })
	cmd.Process.Signal(syscall.SIGTERM)
	if code, took := ended(t, done, 20*time.Second, stderr); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d after %v, want %d", code, took, 128+int(syscall.SIGTERM))
	}
}

// procHasChild reports whether process pid has a child running command
// that it has not waited for.
func procHasChild(pid int, command string) bool {
	// Each thread has its own children: a Go program forks from any.
	var kids []string
	files, _ := filepath.Glob(filepath.Join("/proc", strconv.Itoa(pid), "task", "*", "children"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		kids = append(kids, strings.Fields(string(b))...)
	}
	for _, c := range kids {
		comm, _ := os.ReadFile(filepath.Join("/proc", c, "comm"))
		stat, _ := os.ReadFile(filepath.Join("/proc", c, "stat"))
		if strings.TrimSpace(string(comm)) == command && len(stat) > 0 {
			return true // running, or a zombie the proxy has not waited for yet
		}
	}
	return false
}

// TestProxyStopFaultEnds (issue 19.4): a stop fault without `for` does not
// keep the proxy alive once the server has exited.
func TestProxyStopFaultEnds(t *testing.T) {
	t.Parallel()
	res := mcpstdioIn(t, "{}\n", "proxy", "-no-log", "-exit-grace", "300ms", "-fault", "out:stop", "--", "cat")
	if res.code != 0 {
		t.Errorf("exit %d, want cat's 0\nstderr:\n%s", res.code, res.stderr)
	}
}

// TestProxyUnusableStateDir (issue 19.3): a state directory that cannot
// be made does not keep the server from starting, with or without -no-log.
func TestProxyUnusableStateDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	tmp := t.TempDir()
	for _, args := range [][]string{{"-no-log"}, {}} {
		args = append(append([]string{"proxy", "-dir", filepath.Join(file, "s")}, args...), "--", "cat")
		res := mcpstdioIn(t, "{}\n", append([]string{"TMPDIR=" + tmp}, args...)...)
		if res.code != 0 || res.stdout != "{}\n" {
			t.Errorf("%q: exit %d, stdout %q; want cat's {} and 0\nstderr:\n%s", args, res.code, res.stdout, res.stderr)
		}
	}
	// The status and the record went to the fallback directory instead.
	if ents, _ := os.ReadDir(filepath.Join(tmp, "mcpstdio-"+strconv.Itoa(os.Getuid()))); len(ents) == 0 {
		t.Errorf("nothing in the fallback directory")
	}
}

// mcpstdioIn runs the command with stdin and leading NAME=VALUE
// arguments as environment variables.
func mcpstdioIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var env []string
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		env, args = append(env, args[0]), args[1:]
	}
	ctx, cancel := context.WithTimeout(t.Context(), bound(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = append(append(os.Environ(), "MCPSTDIO_STATE_DIR="+t.TempDir(), "TMPDIR="+t.TempDir()), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", args, err)
	}
	return res
}
