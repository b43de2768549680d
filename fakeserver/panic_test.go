package fakeserver

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

const envPanicChild = "FAKESERVER_TEST_PANIC_CHILD"

// panicWriter is a stdout that panics when asked to write a frame holding
// "PANIC-IN-WRITE", before writing any of it.
type panicWriter struct{ io.WriteCloser }

func (p panicWriter) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("PANIC-IN-WRITE")) {
		panic("stdout writer: boom")
	}
	return p.WriteCloser.Write(b)
}

// TestPanicRecovered: a panic in a tool, or in the stdout the server was
// given, is recovered: the tool's request gets an internal error, the
// report has the panic with its stack, and the server goes on serving and
// ends normally. It runs in a child test process, so that a panic that
// escaped would fail this test rather than end the test binary.
func TestPanicRecovered(t *testing.T) {
	t.Parallel()
	if os.Getenv(envPanicChild) == "" {
		ctx, cancel := context.WithTimeout(context.Background(), testBound(t))
		defer cancel()
		// The child's own deadline comes first, so a child that hangs
		// says where.
		timeout := "-test.timeout=" + (testBound(t) * 3 / 4).String()
		cmd := exec.CommandContext(ctx, testBinary(t), "-test.run=^TestPanicRecovered$", "-test.v", "-test.count=1", timeout)
		cmd.Env = append(os.Environ(), envPanicChild+"=1", "GORACE=atexit_sleep_ms=0")
		cmd.WaitDelay = testBound(t)
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestPanicRecovered")) {
			t.Fatalf("the test in a child process: %v\n%s", err, out)
		}
		return
	}
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"core", nil},
		{"naive loop", []Option{Faults{NaiveLoop: true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := New(c.opts...)
			srv.tools = append(srv.tools, newTool("panic", "Panics.", func(_ *Server, _ *work, a echoArgs) (*frame, error) {
				panic("boom: " + a.Text)
			}))
			r := startRigServer(t, rigOpt{wrapStdout: func(w io.WriteCloser) io.WriteCloser { return panicWriter{w} }}, srv)

			// A panic in a tool: an internal error for its request.
			m := r.callTool("panic", map[string]any{"text": "in the tool"})
			if m.Error == nil || m.Error.Code != wire.CodeInternalError || !strings.Contains(m.Error.Message, "panic in request 1 (tools/call): boom: in the tool") {
				t.Errorf("response to the panicking tool: %+v, want -32603 naming the panic", m)
			}
			rep := r.waitReport("the panic in the report", func(rep Report) bool { return len(rep.Panics) == 1 })
			if p := rep.Panics[0]; !strings.Contains(p, "boom: in the tool") || !strings.Contains(p, "panic_test.go") {
				t.Errorf("Report.Panics[0] = %q, want the panic and its stack through this file", p)
			}

			// A panic in the stdout writer: no response, and the server goes on.
			r.tool(ToolEcho, map[string]any{"text": "PANIC-IN-WRITE"}, nil)
			rep = r.waitReport("the writer's panic in the report", func(rep Report) bool {
				q, _ := requestByID(rep, 2)
				return len(rep.Panics) == 2 && q.State == StateDone
			})
			if !strings.Contains(rep.Panics[1], "panic in request 2 (tools/call): stdout writer: boom") {
				t.Errorf("Report.Panics[1] = %.200q, want the writer's panic", rep.Panics[1])
			}
			if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "after"})); got != "after" {
				t.Errorf("echo after the panics = %q", got)
			}

			r.in.W.Close()
			if err := r.wait(); err != nil {
				t.Errorf("Serve = %v, want nil on stdin EOF", err)
			}
			if rep := r.srv.Report(); rep.Exit != "stdin EOF" || len(rep.Panics) != 2 {
				t.Errorf("final report: Exit %q, %d panics; want stdin EOF and 2", rep.Exit, len(rep.Panics))
			}
			if !strings.Contains(r.stderr.String(), "fakeserver: panic in request 1 (tools/call): boom: in the tool") {
				t.Errorf("stderr %.300q does not tell of the panic", r.stderr.String())
			}
		})
	}
}
