package fakeserver

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// These tests drive the fake with the mcptest host, in-process
// (mcptest.InProcess(srv.Serve)) and as a child process
// (mcptest.Helper serving ServeStdio), configured by the same flags.

// fixture is a fake server under an mcptest Session.
type fixture struct {
	t      *testing.T
	s      *mcptest.Session
	report func() (Report, error)
}

// stopBound is how soon after a cancel the producer must have stopped. It is
// generous: the point is "stopped", not "fast".
const stopBound = 10 * time.Second

// eachTarget runs fn against the fake started with flags, in-process and as
// a child.
func eachTarget(t *testing.T, flags []string, opts []mcptest.Option, fn func(t *testing.T, f *fixture)) {
	t.Helper()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		if !child {
			parsed, err := ParseArgs(flags)
			if err != nil {
				t.Fatal(err)
			}
			srv := New(parsed...)
			s := mcptest.StartServer(t, mcptest.InProcess(srv.Serve), opts...)
			fn(t, &fixture{t: t, s: s, report: func() (Report, error) { return srv.Report(), nil }})
			return
		}
		if runtime.GOOS == "windows" {
			t.Skip("the subprocess and signal paths of the child need Unix")
		}
		path := filepath.Join(t.TempDir(), "report.json")
		s := mcptest.StartServer(t, mcptest.Helper(helperName, append([]string{"-report", path}, flags...)...), opts...)
		fn(t, &fixture{t: t, s: s, report: func() (Report, error) { return ReadReportFile(path) }})
	})
}

func (f *fixture) waitReport(what string, cond func(Report) bool) Report {
	f.t.Helper()
	var rep Report
	var err error
	waitForDiag(f.t, what, func() bool {
		rep, err = f.report()
		return err == nil && cond(rep)
	}, func() string { return fmt.Sprintf("report: %+v (%v)\n%s", rep, err, f.s.Diagnose()) })
	return rep
}

func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testBound(f.t))
	f.t.Cleanup(cancel)
	return ctx
}

func toolParams(name string, args map[string]any, progress bool) map[string]any {
	p := map[string]any{"name": name, "arguments": args}
	if progress {
		p["_meta"] = map[string]any{"progressToken": "tok"}
	}
	return p
}

// secondRequest checks that an echo round trip completes after a fault.
func (f *fixture) secondRequest() {
	f.t.Helper()
	r, err := f.s.Call(f.ctx(), wire.MethodToolsCall, toolParams(ToolEcho, map[string]any{"text": "second"}, false))
	if err != nil {
		f.t.Fatalf("second request: %v\n%s", err, f.s.Diagnose())
	}
	if !strings.Contains(string(r.Result), `"second"`) {
		f.t.Errorf("second request result %s", r.Result)
	}
}

// cancelAndWaitStopped cancels p and returns the cancel's record once the
// report shows its producer stopped, checking the bound.
func (f *fixture) cancelAndWaitStopped(p *mcptest.Pending) CancelRecord {
	f.t.Helper()
	if err := p.Cancel("test"); err != nil {
		f.t.Fatal(err)
	}
	id := fmt.Sprint(p.ID())
	rep := f.waitReport("the producer of id "+id+" to stop", func(rep Report) bool {
		for _, c := range rep.Cancels {
			if c.ID == id && c.Stopped {
				return true
			}
		}
		return false
	})
	for _, c := range rep.Cancels {
		if c.ID == id {
			if c.StoppedAfter > stopBound {
				f.t.Errorf("cancel of id %s: the producer stopped %v after the cancel, want within %v", id, c.StoppedAfter, stopBound)
			}
			return c
		}
	}
	panic("unreachable")
}

func TestSessionCancelStates(t *testing.T) {
	t.Parallel()
	t.Run("before the work starts", func(t *testing.T) {
		eachTarget(t, []string{"-concurrency", "1"}, nil, func(t *testing.T, f *fixture) {
			slow := f.s.Send(wire.MethodToolsCall, toolParams(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, true))
			if _, err := f.s.WaitNotification(f.ctx(), wire.MethodProgress); err != nil {
				t.Fatal(err)
			}
			queued := f.s.Send(wire.MethodToolsCall, toolParams(ToolEcho, map[string]any{"text": "queued"}, false))
			f.waitReport("the queued request", func(rep Report) bool { _, ok := requestByID(rep, queued.ID()); return ok })
			c := f.cancelAndWaitStopped(queued)
			if c.State != StateNotStarted || !c.Suppressed {
				t.Errorf("cancel %+v: want not started, suppressed", c)
			}
			if c := f.cancelAndWaitStopped(slow); c.State != StateRunning {
				t.Errorf("cancel of slow %+v: want running", c)
			}
			f.secondRequest()
			select {
			case <-queued.Done():
				t.Errorf("the request cancelled before it started got a response")
			default:
			}
		})
	})
	t.Run("during remote I/O", func(t *testing.T) {
		eachTarget(t, nil, nil, func(t *testing.T, f *fixture) {
			p := f.s.Send(wire.MethodToolsCall, toolParams(ToolRemote, map[string]any{"chunks": 5, "chunkBytes": 100, "intervalMs": 3600_000}, true))
			if _, err := f.s.WaitNotification(f.ctx(), wire.MethodProgress); err != nil {
				t.Fatal(err)
			}
			c := f.cancelAndWaitStopped(p)
			if c.State != StateRunning || !c.RemoteAborted || !c.Suppressed {
				t.Errorf("cancel %+v: want running, remote aborted, suppressed", c)
			}
			f.secondRequest()
		})
	})
	t.Run("during the subprocess", func(t *testing.T) {
		needShell(t)
		eachTarget(t, nil, nil, func(t *testing.T, f *fixture) {
			p := f.s.Send(wire.MethodToolsCall, toolParams(ToolSubprocess, map[string]any{"stdoutBytes": 1 << 20, "stderrBytes": 1 << 20, "hold": true}, true))
			if _, err := f.s.WaitNotification(f.ctx(), wire.MethodProgress); err != nil {
				t.Fatal(err)
			}
			c := f.cancelAndWaitStopped(p)
			if c.State != StateRunning || !c.ChildKilled || !c.Suppressed {
				t.Errorf("cancel %+v: want running, child killed, suppressed", c)
			}
			f.secondRequest()
		})
	})
	t.Run("after the response write began", func(t *testing.T) {
		needLinux(t)
		eachTarget(t, nil, []mcptest.Option{mcptest.WithPipeCapacity(4096)}, func(t *testing.T, f *fixture) {
			p := f.s.Send(wire.MethodToolsCall, toolParams(ToolBig, BigArgs{FrameSize: bigSize, Kind: PayloadMultibyte}.Map(), false))
			f.s.StallReads()
			if err := f.s.WaitWriterBlocked(f.ctx()); err != nil {
				t.Fatal(err)
			}
			if err := p.Cancel("test"); err != nil {
				t.Fatal(err)
			}
			f.waitReport("the cancel while writing", func(rep Report) bool {
				c, ok := cancelByID(rep, p.ID())
				return ok && c.State == StateWriting
			})
			f.s.ResumeReads()
			r, err := p.Wait(f.ctx())
			if err != nil {
				t.Fatal(err)
			}
			if !r.Late || len(r.Result) >= bigSize {
				t.Errorf("response after the cancel: late %v, %d bytes of result; want late and cut short", r.Late, len(r.Result))
			}
			c := f.cancelAndWaitStoppedNoSend(p)
			if c.Suppressed {
				t.Errorf("cancel %+v: a response whose write began cannot be suppressed", c)
			}
			f.secondRequest()
		})
	})
}

// cancelAndWaitStoppedNoSend waits for the producer of an already cancelled
// request to stop.
func (f *fixture) cancelAndWaitStoppedNoSend(p *mcptest.Pending) CancelRecord {
	f.t.Helper()
	rep := f.waitReport("the producer to stop", func(rep Report) bool { c, _ := cancelByID(rep, p.ID()); return c.Stopped })
	c, _ := cancelByID(rep, p.ID())
	if c.StoppedAfter > stopBound {
		f.t.Errorf("the producer stopped %v after the cancel, want within %v", c.StoppedAfter, stopBound)
	}
	return c
}

// TestSessionBackPressure: with the host's reads stalled, the naive loop
// cannot read the next request until reads resume; the correct core reads
// it and the cancel while its write is blocked.
func TestSessionBackPressure(t *testing.T) {
	t.Parallel()
	needLinux(t)
	opts := []mcptest.Option{mcptest.WithPipeCapacity(4096)}
	t.Run("naive loop", func(t *testing.T) {
		eachTarget(t, []string{"-naive"}, opts, func(t *testing.T, f *fixture) {
			big := f.s.Send(wire.MethodToolsCall, toolParams(ToolBig, BigArgs{FrameSize: bigSize}.Map(), false))
			f.s.StallReads()
			if err := f.s.WaitWriterBlocked(f.ctx()); err != nil {
				t.Fatal(err)
			}
			before := f.waitReport("the big request", func(rep Report) bool { _, ok := requestByID(rep, big.ID()); return ok })
			echo := f.s.Send(wire.MethodToolsCall, toolParams(ToolEcho, map[string]any{"text": "x"}, false))
			if err := f.s.WaitWriterBlocked(f.ctx()); err != nil {
				t.Fatal(err)
			}
			rep, err := f.report()
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Requests) != len(before.Requests) || rep.StdinBytes != before.StdinBytes {
				t.Errorf("while blocked the naive loop read %d requests and %d stdin bytes (before the second request: %d and %d), want no more", len(rep.Requests), rep.StdinBytes, len(before.Requests), before.StdinBytes)
			}
			f.s.ResumeReads()
			if r, err := big.Wait(f.ctx()); err != nil || len(r.Result) < bigSize-200 {
				t.Fatalf("big after resume: %v", err)
			}
			if _, err := echo.Wait(f.ctx()); err != nil {
				t.Fatalf("echo after resume: %v", err)
			}
			f.secondRequest()
		})
	})
	t.Run("correct core", func(t *testing.T) {
		eachTarget(t, nil, opts, func(t *testing.T, f *fixture) {
			big := f.s.Send(wire.MethodToolsCall, toolParams(ToolBig, BigArgs{FrameSize: bigSize}.Map(), false))
			f.s.StallReads()
			if err := f.s.WaitWriterBlocked(f.ctx()); err != nil {
				t.Fatal(err)
			}
			echo := f.s.Send(wire.MethodToolsCall, toolParams(ToolEcho, map[string]any{"text": "x"}, false))
			f.waitReport("the second request read while the write is blocked", func(rep Report) bool {
				_, ok := requestByID(rep, echo.ID())
				return ok
			})
			big.Cancel("test")
			f.waitReport("the cancel read while the write is blocked", func(rep Report) bool {
				c, ok := cancelByID(rep, big.ID())
				return ok && c.State == StateWriting
			})
			f.s.ResumeReads()
			if _, err := big.Wait(f.ctx()); err != nil {
				t.Fatal(err)
			}
			if _, err := echo.Wait(f.ctx()); err != nil {
				t.Fatal(err)
			}
			rep := f.waitReport("the report to settle", func(rep Report) bool { c, _ := cancelByID(rep, big.ID()); return c.Stopped })
			if rep.StdoutLongestBlock <= 0 {
				t.Errorf("StdoutLongestBlock = %v, want the time blocked in write", rep.StdoutLongestBlock)
			}
		})
	})
}

// TestSessionEras: the host's negotiation against each era.
func TestSessionEras(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ era, want string }{
		{"both", wire.Version20260728},
		{"modern", wire.Version20260728},
		{"legacy", wire.Version20251125},
	} {
		t.Run(c.era, func(t *testing.T) {
			eachTarget(t, []string{"-era", c.era}, nil, func(t *testing.T, f *fixture) {
				if got := f.s.ProtocolVersion(); got != c.want {
					t.Errorf("negotiated %q, want %q", got, c.want)
				}
				if err := f.s.Ping(f.ctx()); err != nil {
					t.Error(err)
				}
				f.secondRequest()
			})
		})
	}
}

// TestSessionHostFaults: what an mcptest host sees of the junk faults.
func TestSessionHostFaults(t *testing.T) {
	t.Parallel()
	eachTarget(t, []string{"-banner", "BANNER", "-stdout-log-after", "2", "-stderr-noise", "200000"}, nil, func(t *testing.T, f *fixture) {
		f.secondRequest()
		f.secondRequest()
		var lines []string
		for _, e := range f.s.Transcript() {
			if e.Junk {
				lines = append(lines, string(e.Head))
			}
		}
		if len(lines) != 2 || lines[0] != "BANNER" || lines[1] != "fakeserver: a log line on stdout" {
			t.Errorf("junk %q, want the banner and the log line", lines)
		}
		waitFor(t, "the stderr noise", func() bool { return f.s.Stats().StderrBytes >= 200000 })
	})
}

// TestSessionShutdown: as a child, the fake exits when its stdin closes;
// with -ignore-eof only a signal ends it, and with -ignore-sigterm too only
// the host's further escalation does.
func TestSessionShutdown(t *testing.T) {
	// Not in parallel: the last case's child must die of SIGQUIT within
	// the 300ms grace, which a busier machine can make it miss.
	if runtime.GOOS == "windows" {
		t.Skip("signals need Unix")
	}
	for _, c := range []struct {
		flags []string
		want  string // Exit.String's start
	}{
		{nil, "stdin closed"},
		{[]string{"-ignore-eof"}, "after SIGTERM"},
		{[]string{"-ignore-eof", "-ignore-sigterm"}, "after SIGQUIT"},
	} {
		t.Run(strings.Join(append([]string{"flags"}, c.flags...), " "), func(t *testing.T) {
			s := mcptest.StartServer(t, mcptest.Helper(helperName, c.flags...), mcptest.WithGrace(300*time.Millisecond))
			if err := s.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if got := s.Stats().Exit.String(); !strings.HasPrefix(got, c.want) {
				t.Errorf("the fake ended by %q, want %q\n%s", got, c.want, s.Diagnose())
			}
		})
	}
}

// TestSessionServerRequest: the host counts a server-to-client request as a
// protocol violation in the modern era, and answers it in the legacy one.
func TestSessionServerRequest(t *testing.T) {
	t.Parallel()
	eachTarget(t, []string{"-server-request-after", "2"}, nil, func(t *testing.T, f *fixture) {
		f.secondRequest()
		waitFor(t, "the violation to be counted", func() bool { return f.s.Stats().ProtocolViolations == 1 })
	})
	t.Run("legacy", func(t *testing.T) {
		eachTarget(t, []string{"-era", "legacy", "-server-request-after", "3"}, nil, func(t *testing.T, f *fixture) {
			f.secondRequest() // messages 1 and 2 were initialize and notifications/initialized
			f.waitReport("the host's answer", func(rep Report) bool { return rep.ResponsesRead == 1 })
			if st := f.s.Stats(); st.ServerRequests != 1 || st.ProtocolViolations != 0 {
				t.Errorf("host stats: %d server requests, %d violations; want 1 and 0", st.ServerRequests, st.ProtocolViolations)
			}
		})
	})
}
