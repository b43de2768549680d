package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// running is the command running with pipes the test holds
// (cmdtest.Running, under the names the tests here use).
type running struct {
	*cmdtest.Running
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
}

// startProxy runs mcpstdio with args, bounded by the test's deadline, with
// env added to the environment.
func startProxy(t *testing.T, env []string, args ...string) *running {
	t.Helper()
	return runningOf(cmdtest.Start(t, env, nil, binary, args...))
}

func runningOf(r *cmdtest.Running) *running {
	return &running{Running: r, cmd: r.Cmd, stdin: r.Stdin, stdout: r.Stdout, stderr: r.Stderr}
}

func (r *running) wait(t *testing.T) int                 { t.Helper(); return r.Wait(t) }
func (r *running) call(t *testing.T, line string) string { t.Helper(); return r.Call(t, line) }

const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

// readRecord reads the record at path.
func readRecord(t *testing.T, path string) []record.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []record.Event
	if err := record.Read(f, func(e record.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestProxyCommand: the proxy in front of the fake: the host's call is
// answered, nothing of the proxy's own is on stdout, the record lands in
// the per-user state directory (never the working directory) with private
// permissions, and the exit status is the server's.
func TestProxyCommand(t *testing.T) {
	t.Parallel()
	stateDir := filepath.Join(t.TempDir(), "state")
	workDir := t.TempDir()
	r := runningOf(cmdtest.Start(t, []string{state.EnvStateDir + "=" + stateDir}, func(c *exec.Cmd) { c.Dir = workDir },
		binary, "proxy", "--", binary, "fake"))
	if got := r.call(t, ping); got != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("response %q", got)
	}
	r.stdin.Close()
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", code, r.stderr)
	}
	if rest, _ := io.ReadAll(r.stdout); len(rest) != 0 || r.stderr.Len() != 0 {
		t.Errorf("the proxy wrote its own output: stdout %q, stderr %q", rest, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(stateDir, "*.ndjson"))
	if len(files) != 1 {
		t.Fatalf("records in the state directory: %q, want one", files)
	}
	if runtime.GOOS != "windows" {
		for path, want := range map[string]os.FileMode{stateDir: 0o700, files[0]: 0o600} {
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
				t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
			}
		}
	}
	evs := readRecord(t, files[0])
	if evs[0].Header == nil || evs[0].Header.Argv[1] != "fake" || evs[len(evs)-1].Ev != record.EvSummary {
		t.Errorf("record from %s to %s, want a header with the server's argv and a summary", evs[0].Ev, evs[len(evs)-1].Ev)
	}
	if left, _ := os.ReadDir(r.cmd.Dir); len(left) != 0 {
		t.Errorf("the proxy wrote %d files in its working directory", len(left))
	}
	if st, _ := filepath.Glob(filepath.Join(stateDir, "*"+state.StatusSuffix)); len(st) != 0 {
		t.Errorf("status files left after the end: %q", st)
	}
}

func TestProxyExitStatus(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("uses sh")
	}
	for script, want := range map[string]int{"exit 3": 3, "kill -9 $$": 128 + 9, "cat >/dev/null": 0} {
		r := startProxy(t, nil, "proxy", "-no-log", "-dir", t.TempDir(), "--", "sh", "-c", script)
		r.stdin.Close()
		if code := r.wait(t); code != want {
			t.Errorf("proxy -- sh -c %q: exit %d, want %d\nstderr:\n%s", script, code, want, r.stderr)
		}
	}
}

// TestProxySignal: SIGTERM given to the proxy reaches the server (the fake
// exits on it, with status 0) and is recorded; the proxy exits with the
// server's status, its stdin still open.
func TestProxySignal(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on windows")
	}
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	r := startProxy(t, nil, "proxy", "-log", log, "--", binary, "fake")
	r.call(t, ping) // the proxy and the server are running
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", code, r.stderr)
	}
	var got []string
	for _, e := range readRecord(t, log) {
		switch e.Ev {
		case record.EvSignal:
			got = append(got, e.Signal+" "+e.Text)
		case record.EvExit:
			got = append(got, e.Status)
		}
	}
	if want := []string{"SIGTERM received by the proxy (from the host, or whoever signalled it) and passed on to the server", "exit status 0"}; !slices.Equal(got, want) {
		t.Errorf("record says %q, want %q", got, want)
	}
}

// TestProxyStatusCommand: while a call is pending, `mcpstdio status` shows
// it, in words and as JSON.
func TestProxyStatusCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := startProxy(t, nil, "proxy", "-dir", dir, "-unanswered", "100ms", "--", binary, "fake")
	r.call(t, ping)
	io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":600000}}}`+"\n")
	// The status file is rewritten every second and nothing signals it:
	// poll the command, bounded.
	var out result
	poll.Wait(t, cmdtest.Bound(t), "status saying id 2 is unanswered", func() bool {
		out = mcpstdio(t, time.Minute, "status", "-dir", dir)
		return strings.Contains(out.stdout, "server has not answered id 2")
	}, func() string { return out.stdout })
	for _, want := range []string{"pending id 2 tools/call slow (host → server): waiting", "verdict server has not answered id 2 (tools/call slow)", "record  " + dir} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("status does not say %q:\n%s", want, out.stdout)
		}
	}
	js := mcpstdio(t, time.Minute, "status", "-json", "-dir", dir)
	var sts []struct {
		Path    string
		Pending []proxy.PendingStatus
	}
	if err := json.Unmarshal([]byte(js.stdout), &sts); err != nil || len(sts) != 1 || len(sts[0].Pending) != 1 {
		t.Errorf("status -json = %s (%v), want one proxy with one pending call", js.stdout, err)
	}
	if runtime.GOOS == "linux" {
		// No network listener: no socket among the proxy's descriptors.
		fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(r.cmd.Process.Pid), "fd"))
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join("/proc", strconv.Itoa(r.cmd.Process.Pid), "fd", fd.Name())); strings.HasPrefix(l, "socket:") {
				t.Errorf("the proxy holds a socket: fd %s -> %s", fd.Name(), l)
			}
		}
	}
	r.stdin.Close()
	r.wait(t)
	if out := mcpstdio(t, time.Minute, "status", "-dir", dir); !strings.Contains(out.stdout, "no running mcpstdio proxy") {
		t.Errorf("status after the end:\n%s", out.stdout)
	}
}

func TestProxyUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"proxy"}, {"proxy", "-fault", "out:nosuch", "--", "x"}, {"proxy", "-redact", "a..b", "--", "x"}} {
		if res := mcpstdio(t, time.Minute, args...); res.code != 2 || !strings.Contains(res.stderr, "mcpstdio proxy:") {
			t.Errorf("mcpstdio %q: exit %d, stderr %q; want 2 and a message", args, res.code, res.stderr)
		}
	}
	if res := mcpstdio(t, time.Minute, "proxy", "-h"); res.code != 0 || !strings.Contains(res.stderr, "withhold-cancel") {
		t.Errorf("proxy -h: exit %d, stderr %q", res.code, res.stderr)
	}
	if res := mcpstdio(t, time.Minute, "proxy", "-no-log", "-dir", t.TempDir(), "--", "/no/such/server"); res.code != 127 {
		t.Errorf("proxy with a missing server: exit %d, want 127 (%s)", res.code, res.stderr)
	}
}

// TestProxyKilledTakesServer (Linux): a host that kills the proxy kills
// the server with it, as it would have killed the server itself.
func TestProxyKilledTakesServer(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Pdeathsig is Linux only")
	}
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	r := startProxy(t, nil, "proxy", "-log", log, "--", binary, "fake")
	r.call(t, ping)
	// The proxy writes its record as it goes: read the whole lines it has
	// written so far until they hold the spawn event.
	var pid int
	poll.Wait(t, cmdtest.Bound(t), "the spawn event in the proxy's record", func() bool {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		if len(b) == 0 {
			return false // not even the header's line yet
		}
		if err := record.Read(bytes.NewReader(b), func(e record.Event) error {
			if e.Ev == record.EvSpawn {
				pid = e.PID
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return pid != 0
	}, nil)
	r.cmd.Process.Kill()
	r.wait(t)
	// Nothing reports another process's end: watch /proc, bounded.
	poll.Wait(t, cmdtest.Bound(t), fmt.Sprintf("the server (pid %d) gone with the killed proxy", pid), func() bool {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		return err != nil || strings.Contains(string(b), ") Z ") // gone, or a zombie waiting for its new parent
	}, nil)
}

// TestProxyRelativeLogAbsoluteInStatus: a relative -log is kept in the
// status file as an absolute path, so that `status` run from another
// directory finds the record (and the live page reads it).
func TestProxyRelativeLogAbsoluteInStatus(t *testing.T) {
	t.Parallel()
	stateDir := t.TempDir()
	r := runningOf(cmdtest.Start(t, nil, func(c *exec.Cmd) { c.Dir = stateDir },
		binary, "proxy", "-dir", stateDir, "-log", "rec.ndjson", "--", binary, "fake"))
	r.call(t, ping)
	var e state.StatusEntry
	poll.Wait(t, cmdtest.Bound(t), "a status file", func() bool {
		files, _ := filepath.Glob(filepath.Join(stateDir, "*"+state.StatusSuffix))
		if len(files) == 0 {
			return false
		}
		e = state.ReadStatus(files[0], time.Now())
		return e.Err == nil
	}, func() string { return fmt.Sprintf("%+v", e) })
	if want := filepath.Join(stateDir, "rec.ndjson"); e.Status.Log != want || e.LogErr != nil {
		t.Errorf("status file's log %q (%v), want %q, to be read", e.Status.Log, e.LogErr, want)
	}
	r.stdin.Close()
	r.wait(t)
}
