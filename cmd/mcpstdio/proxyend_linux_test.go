package main

// The proxy's end-of-life reproductions that need the built command: a proxy that
// must end whatever the host does, and must never keep the user's server
// from running. Linux: they use sh, yes, FIONREAD and /proc.

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/record"
)

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
	ctx, cancel := context.WithTimeout(t.Context(), cmdtest.Bound(t))
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

// TestProxyEndsHostNotReading: SIGTERM while the host has
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
	poll.Wait(t, cmdtest.Bound(t), "the host's stdout pipe full", func() bool { return unread(out) >= 64<<10 }, nil)
	cmd.Process.Signal(syscall.SIGTERM)
	code, took := ended(t, done, cmdtest.Bound(t), stderr)
	t.Logf("ended %v after SIGTERM (exit grace %v)", took, grace)
	if code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status %d, want the server's, %d", code, 128+int(syscall.SIGTERM))
	}
	// The documented bound: ExitGrace after the server's exit for its
	// output, at most ExitGrace more for the observer's backlog, and the
	// time a loaded machine takes to run the proxy's goroutines.
	if limit := 2*grace + 3*time.Second; took > limit {
		t.Errorf("ended %v after SIGTERM, over 2×ExitGrace (%v) + 3s", took, grace)
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

// TestProxySecondSignal: the server exits on the first
// SIGTERM while a process it started holds its stdout; a second SIGTERM
// ends the proxy at once.
func TestProxySecondSignal(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd, _, stderr, done := hostNeverReads(t, true, "proxy", "-no-log", "-exit-grace", "1m", "--", "sh", "-c", "sleep 30 & echo $! >"+pidFile+"; exec cat")
	poll.Wait(t, cmdtest.Bound(t), "the server's child", func() bool { b, _ := os.ReadFile(pidFile); return len(bytes.TrimSpace(b)) > 0 }, nil)
	b, _ := os.ReadFile(pidFile)
	if child, err := strconv.Atoi(string(bytes.TrimSpace(b))); err == nil {
		t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
	}
	poll.Wait(t, cmdtest.Bound(t), "the server running cat", func() bool { return procHasChild(cmd.Process.Pid, "cat") }, nil)
	cmd.Process.Signal(syscall.SIGTERM)
	// The server (cat) is gone when the proxy's status says so; nothing
	// announces it to the test: wait for cat's pid to go from /proc.
	poll.Wait(t, cmdtest.Bound(t), "the server gone", func() bool { return !procHasChild(cmd.Process.Pid, "cat") }, nil)
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

// TestProxyStopFaultEnds: a stop fault without `for` does not
// keep the proxy alive once the server has exited.
func TestProxyStopFaultEnds(t *testing.T) {
	t.Parallel()
	res := mcpstdioIn(t, "{}\n", "proxy", "-no-log", "-exit-grace", "300ms", "-fault", "out:stop", "--", "cat")
	if res.code != 0 {
		t.Errorf("exit %d, want cat's 0\nstderr:\n%s", res.code, res.stderr)
	}
}

// TestProxyUnusableStateDir: a state directory that cannot
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
// arguments as environment variables, with the state and temporary
// directories the test's own.
func mcpstdioIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	env := []string{"MCPSTDIO_STATE_DIR=" + t.TempDir(), "TMPDIR=" + t.TempDir()}
	for len(args) > 0 && strings.Contains(args[0], "=") && !strings.HasPrefix(args[0], "-") {
		env, args = append(env, args[0]), args[1:]
	}
	return resultOf(cmdtest.Run(t, cmdtest.Bound(t), env, strings.NewReader(stdin), binary, args...))
}

// TestProxyStatusFindsLogFile: a proxy whose record goes to
// -log FILE elsewhere is found by `mcpstdio status`, which names the
// record; with none running, status says where it looked and how to look
// elsewhere.
func TestProxyStatusFindsLogFile(t *testing.T) {
	t.Parallel()
	stateDir, tmp := t.TempDir(), t.TempDir()
	env := []string{"MCPSTDIO_STATE_DIR=" + stateDir, "TMPDIR=" + tmp}
	log := filepath.Join(t.TempDir(), "elsewhere.ndjson")
	r := startProxy(t, env, "proxy", "-log", log, "--", binary, "fake")
	r.call(t, ping)
	var out result
	// The status file is rewritten every second and nothing announces it.
	poll.Wait(t, cmdtest.Bound(t), "status naming the proxy", func() bool {
		out = mcpstdioIn(t, "", append(env, "status")...)
		return strings.Contains(out.stdout, "record  "+log)
	}, nil)
	r.stdin.Close()
	r.wait(t)
	out = mcpstdioIn(t, "", append(env, "status")...)
	for _, want := range []string{"no running mcpstdio proxy", stateDir, "-dir"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("status with no proxy does not say %q:\n%s", want, out.stdout)
		}
	}
}

// TestProxyLogRefusesLink: -log naming a symbolic link
// records nothing, truncates nothing, and the server runs; the refusal is
// in the status file, and on stderr once with -v (never otherwise: the
// host's stderr is the server's).
func TestProxyLogRefusesLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	os.WriteFile(target, []byte("keep\n"), 0o600)
	link := filepath.Join(dir, "rec.ndjson")
	os.Symlink(target, link)
	res := mcpstdioIn(t, "{}\n", "proxy", "-log", link, "--", "cat")
	if res.code != 0 || res.stdout != "{}\n" {
		t.Errorf("exit %d, stdout %q; want the server's", res.code, res.stdout)
	}
	if b, _ := os.ReadFile(target); string(b) != "keep\n" {
		t.Errorf("the link's target holds %q", b)
	}
	if res.stderr != "" {
		t.Errorf("stderr %q without -v: want nothing of the proxy's", res.stderr)
	}
	res = mcpstdioIn(t, "{}\n", "proxy", "-v", "-log", link, "--", "cat")
	if res.code != 0 || strings.Count(res.stderr, "symbolic link") != 1 {
		t.Errorf("-v: exit %d, stderr %q: want the refusal said once", res.code, res.stderr)
	}
}

// TestProxyFlagMessages: the help names each default once;
// a bad flag value is one line, not the whole usage; -log-max -1 (no
// rotation, as the record file documents) is taken.
func TestProxyFlagMessages(t *testing.T) {
	t.Parallel()
	help := mcpstdioIn(t, "", "proxy", "-h")
	for _, line := range strings.Split(help.stderr, "\n") {
		if strings.Count(line, "(default") > 1 {
			t.Errorf("help line names two defaults: %q", line)
		}
	}
	bad := mcpstdioIn(t, "", "proxy", "-chunk", "lots", "--", "cat")
	if bad.code != 2 || strings.Count(strings.TrimSpace(bad.stderr), "\n") != 0 || !strings.Contains(bad.stderr, "-chunk") {
		t.Errorf("a bad flag value: exit %d, stderr %q; want 2 and one line naming the flag", bad.code, bad.stderr)
	}
	if res := mcpstdioIn(t, "{}\n", "proxy", "-log-max", "-1", "--", "cat"); res.code != 0 {
		t.Errorf("-log-max -1: exit %d, stderr %q", res.code, res.stderr)
	}
}

// TestProxyRecordCut: a record whose writing fails (a file
// size limit here, as a full disk does) ends with one cut event that says
// why, after its last whole line; the proxy forwards every byte and exits
// with the server's status; show says the record is damaged and exits 1.
func TestProxyRecordCut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "rec.ndjson")
	// 16 blocks (8 or 16 KiB as the shell counts them): the header fits,
	// the first batch holding the 100 KB result does not.
	r := runningOf(cmdtest.Start(t, nil, nil, "sh", "-c", `ulimit -f 16 && exec "$@"`, "sh",
		binary, "proxy", "-log-bodies", "-dir", dir, "-log", log, "--", binary, "fake"))
	r.call(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if got := r.call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":100000}}}`); len(got) < 100000 {
		t.Fatalf("the host got %d bytes of the big result", len(got))
	}
	r.call(t, ping)
	r.stdin.Close()
	if code := r.wait(t); code != 0 {
		t.Errorf("the proxy exited %d, want the server's 0\nstderr:\n%s", code, r.stderr)
	}
	evs := readRecord(t, log) // whole lines only: it fails on a cut one
	if last := evs[len(evs)-1]; last.Ev != record.EvCut || !strings.Contains(last.Err, "file too large") {
		t.Errorf("the record ends with %+v, want a cut event saying the file was too large", last)
	}
	res := mcpstdio(t, time.Minute, "show", log)
	if res.code != 1 || !strings.Contains(res.stderr, "the record is damaged: writing it failed") {
		t.Errorf("show of a cut record: exit %d, stderr %q; want 1 and the record called damaged", res.code, res.stderr)
	}
}

// TestProxyStopUntilEndHostCloses: `-fault out:stop` (until the end) in
// front of `mcpstdio fake` answering a 4 MiB call. The server blocks
// writing its stdout, which the fault holds; the host closes the proxy's
// stdin and waits, reading stdout. The server cannot exit while its write
// is blocked, so the session's end ends the stop ExitGrace later (recorded
// so), and the server and the proxy end; before, the proxy ran forever.
func TestProxyStopUntilEndHostCloses(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	r := startProxy(t, []string{"MCPSTDIO_STATE_DIR=" + stateDir, "TMPDIR=" + t.TempDir()},
		"proxy", "-log", log, "-exit-grace", "300ms", "-fault", "out:stop", "--", binary, "fake")
	go io.Copy(io.Discard, r.stdout)
	io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":4194304}}}`+"\n")
	// The server is blocked writing once its stdout pipe, which the proxy
	// does not read, is full: the status file says how full it is.
	poll.Wait(t, cmdtest.Bound(t), "the server's stdout pipe full", func() bool {
		files, _ := filepath.Glob(filepath.Join(stateDir, "*"+state.StatusSuffix))
		if len(files) != 1 {
			return false
		}
		e := state.ReadStatus(files[0], time.Now())
		if e.Err != nil || len(e.Status.Streams) < 2 || e.Status.Streams[1].SourcePipe == nil {
			return false
		}
		return *e.Status.Streams[1].SourcePipe >= 60<<10 // of 64 KiB
	}, nil)
	r.stdin.Close()
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d, want the server's 0\nstderr:\n%s", code, r.stderr)
	}
	var ended string
	for _, e := range readRecord(t, log) {
		if e.Ev == record.EvFault && strings.HasPrefix(e.Text, "reading the server's stdout again") {
			ended = e.Text
		}
	}
	if want := "the host closed the proxy's stdin 300ms ago and the server still runs"; !strings.Contains(ended, want) {
		t.Errorf("the stop's end in the record: %q, want it to say %q", ended, want)
	}
}
