package fakeserver

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestEndOnCRLF: a line ending in "\r\n" ends the server unanswered with the
// fault, and is answered like any other without it.
func TestEndOnCRLF(t *testing.T) {
	for _, fault := range []bool{false, true} {
		r := startRig(t, rigOpt{legacy: true}, Faults{EndOnCRLF: fault})
		r.writeLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\r"))
		if !fault {
			if m, _ := r.response(1); m.Error != nil {
				t.Errorf("ping on a CRLF line: %+v, want a result", m)
			}
			r.close()
			continue
		}
		if f, err := r.next(); err == nil {
			t.Errorf("EndOnCRLF: stdout gave %q, want its end", f)
		}
		if err := r.wait(); !errors.Is(err, ErrExited) {
			t.Errorf("EndOnCRLF: Serve = %v, want ErrExited", err)
		}
		if rep := r.srv.Report(); len(rep.Requests) != 0 {
			t.Errorf("EndOnCRLF: %d requests handled, want none", len(rep.Requests))
		}
	}
}

// TestCrashOnBrokenPipe: with its host's end of stdout closed under a
// blocked response, the fake as a child exits 0 at stdin's end, or, with the
// fault, crashes with exit status 2 and a panic's trace.
func TestCrashOnBrokenPipe(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("EPIPE on a closed pipe is how Unix reports it")
	}
	t.Parallel()
	for _, fault := range []bool{false, true} {
		t.Run(map[bool]string{false: "without", true: "with"}[fault], func(t *testing.T) {
			t.Parallel()
			var flags []string
			if fault {
				flags = append(flags, "-crash-on-broken-pipe")
			}
			s := mcptest.StartServer(t, mcptest.Helper(helperName, flags...), mcptest.WithPipeCapacity(16<<10))
			ctx := t.Context()
			s.StallReads()
			s.Send(wire.MethodToolsCall, toolParams(ToolBig, map[string]any{"bytes": 1 << 20}, false))
			if err := s.WaitWriterBlocked(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.CloseStdout(); err != nil {
				t.Fatal(err)
			}
			if err := s.CloseStdin(); err != nil {
				t.Fatal(err)
			}
			ex, err := s.WaitExit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			s.Close() // waits for stderr's end: all of the trace is read
			stderr := string(s.Stderr())
			switch {
			case !fault && ex.Code != 0:
				t.Errorf("without the fault: the fake ended %v, want exit code 0; stderr: %s", ex, stderr)
			case fault && (ex.Code != 2 || !strings.Contains(stderr, "panic: fakeserver: writing stdout: ") || !strings.Contains(stderr, "broken pipe")):
				t.Errorf("with the fault: the fake ended %v, want exit code 2 and a panic's trace; stderr: %s", ex, stderr)
			}
		})
	}
}

// TestFillStdinAfterCall: once the first tools/call is read, the fake stops
// reading and fills its stdin pipe, so that the host's next message cannot
// be written, and it sees the host close its end though it reads nothing.
func TestFillStdinAfterCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the fake fills its stdin pipe through /proc: Linux only")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "report.json")
	s := mcptest.StartServer(t, mcptest.Helper(helperName, "-report", path, "-call", CallHang, "-fill-stdin-after-call"),
		mcptest.WithPipeCapacity(16<<10))
	f := &fixture{t: t, s: s, report: func() (Report, error) { return ReadReportFile(path) }}
	s.Send(wire.MethodToolsCall, toolParams(ToolEcho, map[string]any{"text": "x"}, false))
	rep := f.waitReport("stdin filled and the call running", func(rep Report) bool {
		q, ok := firstToolsCall(rep)
		return !rep.StdinStopped.IsZero() && ok && q.State == StateRunning
	})
	if rep.StdinCapacity != 16<<10 || rep.StdinFill < rep.StdinCapacity-64 {
		t.Errorf("the fake filled its stdin pipe to %d of %d bytes, want within 64 bytes of 16384", rep.StdinFill, rep.StdinCapacity)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := s.WriteStdin(wctx, []byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`+"\n")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a message written to the filled pipe: %v, want it to time out", err)
	}
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	f.waitReport("the hang-up of stdin seen", func(rep Report) bool { return rep.EOF && !rep.EOFAt.IsZero() })
}

func firstToolsCall(rep Report) (RequestRecord, bool) {
	for _, q := range rep.Requests {
		if q.Method == wire.MethodToolsCall {
			return q, true
		}
	}
	return RequestRecord{}, false
}
