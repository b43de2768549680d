//go:build unix

package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

const envStdioArgs = "FAKESERVER_TEST_STDIO_ARGS"

// TestHelperServeStdio is not a test: it is the child process that
// startChild runs (the os/exec pattern). Run normally, it returns at once.
func TestHelperServeStdio(t *testing.T) {
	js := os.Getenv(envStdioArgs)
	if js == "" {
		return
	}
	var args []string
	json.Unmarshal([]byte(js), &args)
	err := ServeStdio(context.Background(), args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ServeStdio:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// child is the fake server as a real child process, with the rig's host.
type child struct {
	*rig
	cmd  *exec.Cmd
	exit chan error
}

func startChild(t *testing.T, ro rigOpt, args ...string) *child {
	t.Helper()
	in, out := rigPipes(t, ro)
	stderr := pipes.NewCapture(1 << 16)
	cmd := exec.Command(testBinary(t), "-test.run=^TestHelperServeStdio$")
	cmd.Env = append(os.Environ(), envStdioArgs+"="+string(mustJSON(t, args)), "GORACE=atexit_sleep_ms=0")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = in.R, out.W, stderr
	cmd.WaitDelay = testBound(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in.R.Close()
	out.W.Close()
	c := &child{
		rig:  &rig{t: t, in: in, out: out, stderr: stderr, fr: pipes.NewFramer(out.R, 64<<20), modern: !ro.legacy},
		cmd:  cmd,
		exit: make(chan error, 1),
	}
	go func() { c.exit <- cmd.Wait() }()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		c.waitExit()
		in.Close()
		out.Close()
	})
	return c
}

// waitExit returns the child's exit error, failing if it does not exit.
func (c *child) waitExit() error {
	c.t.Helper()
	select {
	case err := <-c.exit:
		c.exit <- err
		return err
	case <-time.After(testBound(c.t)):
		c.t.Fatalf("the child did not exit within %v; stderr: %s", testBound(c.t), c.stderr)
		return nil
	}
}

func TestChildEOF(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "report.json")
	c := startChild(t, rigOpt{}, "-report", path, "-tools", "echo")
	if got := text(t, c.callTool(ToolEcho, map[string]any{"text": "hi"})); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	if m := c.callTool(ToolBig, BigArgs{Bytes: 1}.Map()); m.Error == nil {
		t.Errorf("big is not offered with -tools echo, got %s", m.Result)
	}
	c.in.W.Close()
	if err := c.waitExit(); err != nil {
		t.Errorf("child exit: %v; stderr: %s", err, c.stderr)
	}
	rep, err := ReadReportFile(path)
	if err != nil || len(rep.Requests) != 2 || rep.Exit != "stdin EOF" {
		t.Errorf("report file: %+v, %v", rep, err)
	}
}

// TestChildSIGTERMWhileBlocked: a child blocked writing a stdout nobody
// reads still exits on SIGTERM, because its stdio is interruptible.
func TestChildSIGTERMWhileBlocked(t *testing.T) {
	t.Parallel()
	c := startChild(t, rigOpt{outCap: 4096})
	c.tool(ToolBig, BigArgs{FrameSize: bigSize}.Map(), nil)
	c.waitStdoutFull()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.waitExit(); err != nil {
		t.Errorf("child exit after SIGTERM: %v; stderr: %s", err, c.stderr)
	}
}

func TestChildIgnoreSIGTERM(t *testing.T) {
	t.Parallel()
	c := startChild(t, rigOpt{}, "-ignore-sigterm")
	c.call(wire.MethodDiscover, nil) // the child is serving: the signal disposition is set
	c.cmd.Process.Signal(syscall.SIGTERM)
	// Still serving after SIGTERM, and only SIGKILL ends it.
	if got := text(t, c.callTool(ToolEcho, map[string]any{"text": "alive"})); got != "alive" {
		t.Errorf("echo after SIGTERM = %q", got)
	}
	c.cmd.Process.Kill()
	var ee *exec.ExitError
	if err := c.waitExit(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("child exit %v, want killed by SIGKILL", err)
	}
}

func TestChildExitAfterBytes(t *testing.T) {
	t.Parallel()
	c := startChild(t, rigOpt{}, "-exit-after-bytes", "3000")
	c.tool(ToolBig, BigArgs{FrameSize: 10_000}.Map(), nil)
	_, err := c.next()
	var te *pipes.TruncatedFrameError
	if !errors.As(err, &te) || te.Lost != 3000 {
		t.Errorf("got %v, want the frame cut after 3000 bytes", err)
	}
	var ee *exec.ExitError
	if err := c.waitExit(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("child exit %v, want code 1", err)
	}
}

// reportFile reads the child's report file once it satisfies cond.
func (c *child) reportFile(path, what string, cond func(Report) bool) Report {
	c.t.Helper()
	var rep Report
	waitFor(c.t, what, func() bool {
		r, err := ReadReportFile(path)
		rep = r
		return err == nil && cond(r)
	})
	return rep
}

// TestChildSignalsRecorded: a child that ignores stdin's end and SIGTERM
// records the EOF, each signal with its time (ignored), its pid, and ends
// only by SIGKILL.
func TestChildSignalsRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	c := startChild(t, rigOpt{}, "-report", path, "-ignore-eof", "-ignore-sigterm")
	c.call(wire.MethodDiscover, nil)
	c.in.W.Close()
	rep := c.reportFile(path, "the EOF in the report", func(r Report) bool { return r.EOF })
	if rep.EOFAt.IsZero() || rep.PID != c.cmd.Process.Pid {
		t.Errorf("report: EOF at %v, pid %d; want a time and pid %d", rep.EOFAt, rep.PID, c.cmd.Process.Pid)
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	c.reportFile(path, "SIGTERM in the report", func(r Report) bool { return len(r.Signals) == 1 })
	c.cmd.Process.Signal(syscall.SIGINT)
	rep = c.reportFile(path, "SIGINT in the report", func(r Report) bool { return len(r.Signals) == 2 })
	for i, want := range []string{"SIGTERM", "SIGINT"} {
		if s := rep.Signals[i]; s.Name != want || !s.Ignored || s.At.Before(rep.EOFAt) {
			t.Errorf("signal %d: %+v, want %s ignored after the EOF at %v", i, s, want, rep.EOFAt)
		}
	}
	if rep.Exit != "" {
		t.Errorf("the fake ended (%q) though it ignores EOF and SIGTERM", rep.Exit)
	}
	c.cmd.Process.Kill()
	var ee *exec.ExitError
	if err := c.waitExit(); !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Errorf("child exit %v, want killed by SIGKILL", err)
	}
}

// TestChildSIGTERMRecorded: SIGTERM ends a child that does not ignore it,
// and the report keeps it.
func TestChildSIGTERMRecorded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	c := startChild(t, rigOpt{}, "-report", path)
	c.call(wire.MethodDiscover, nil)
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.waitExit(); err != nil {
		t.Errorf("child exit after SIGTERM: %v; stderr: %s", err, c.stderr)
	}
	rep, err := ReadReportFile(path)
	if err != nil || len(rep.Signals) != 1 || rep.Signals[0].Name != "SIGTERM" || rep.Signals[0].Ignored || rep.Exit != "context cancelled" {
		t.Errorf("report: signals %+v, exit %q, %v; want SIGTERM, not ignored, and the end", rep.Signals, rep.Exit, err)
	}
}

// TestChildNoHandshake: -no-handshake never answers initialize or
// server/discover; a cancel of initialize is recorded, and other requests
// are answered.
func TestChildNoHandshake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	c := startChild(t, rigOpt{legacy: true}, "-report", path, "-no-handshake")
	id := c.send(wire.MethodInitialize, map[string]any{"protocolVersion": wire.Version20251125, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "0"}})
	c.reportFile(path, "initialize running", func(r Report) bool {
		q, ok := requestByID(r, id)
		return ok && q.State == StateRunning
	})
	c.cancelReq(id)
	rep := c.reportFile(path, "the cancel of initialize", func(r Report) bool {
		q, ok := requestByID(r, id)
		return ok && q.State == StateDone && len(r.Cancels) == 1
	})
	if q, _ := requestByID(rep, id); !q.Suppressed || q.ResponseBytes != 0 {
		t.Errorf("initialize after its cancel: %+v, want no response", q)
	}
	if m := c.call(wire.MethodPing, nil); m.Error != nil {
		t.Errorf("ping: %v", m.Error)
	}
}
