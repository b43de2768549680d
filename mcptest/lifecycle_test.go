package mcptest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestClosedSession: every operation on a closed session, and every request
// pending at Close, fails at once with an error wrapping ErrClosed.
func TestClosedSession(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s, err := mcptest.Start(ctx, target(t, child))
		if err != nil {
			t.Fatal(err)
		}
		inFlight := s.Send(wire.MethodToolsCall, call("wait-cancel", nil)) // never answered uncancelled
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		start := time.Now()
		if _, err := inFlight.Wait(ctx); !errors.Is(err, mcptest.ErrClosed) {
			t.Errorf("a call in flight during Close: Wait = %v, want an error wrapping ErrClosed", err)
		}
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
		if _, err := inFlight.Wait(ctx); !errors.Is(err, mcptest.ErrClosed) {
			t.Errorf("Pending.Wait after Close = %v, want ErrClosed", err)
		}
		ops := map[string]func() error{
			"Call":              func() error { _, err := s.Call(ctx, wire.MethodPing, nil); return err },
			"Send":              func() error { _, err := s.Send(wire.MethodPing, nil).Wait(ctx); return err },
			"CallTool":          func() error { _, err := s.CallTool(ctx, "echo", nil); return err },
			"Ping":              func() error { return s.Ping(ctx) },
			"Notify":            func() error { return s.Notify(wire.MethodInitialized, nil) },
			"Cancel":            func() error { return inFlight.Cancel("late") },
			"WriteStdin":        func() error { return s.WriteStdin(ctx, []byte("x\n")) },
			"CloseStdin":        func() error { return s.CloseStdin() },
			"CloseStdout":       func() error { return s.CloseStdout() },
			"WaitWriterBlocked": func() error { return s.WaitWriterBlocked(ctx) },
			"WaitStdoutBytes":   func() error { return s.WaitStdoutBytes(ctx, 1<<40) },
			"WaitNotification":  func() error { _, err := s.WaitNotification(ctx, "x"); return err },
		}
		if child {
			ops["Signal"] = func() error { return s.Signal(syscall.SIGTERM) }
		}
		for name, op := range ops {
			opStart := time.Now()
			err := op()
			if !errors.Is(err, mcptest.ErrClosed) {
				t.Errorf("%s after Close = %v, want an error wrapping ErrClosed", name, err)
			} else if !strings.Contains(err.Error(), "while the server was running") {
				t.Errorf("%s after Close = %v, want it to say how the session ended", name, err)
			}
			if d := time.Since(opStart); d > time.Second {
				t.Errorf("%s after Close took %v, want it to fail at once", name, d)
			}
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("Close and the failures took %v", d)
		}
		ex, err := s.WaitExit(ctx)
		if err != nil || ex.How == "" {
			t.Errorf("WaitExit after Close = %v, %v; want how the server ended", ex, err)
		}
		s.StallReads() // no effect, no hang
		s.ResumeReads()
	})
}

// TestClosedAfterServerEnded: a session whose server had already ended says
// so in the ErrClosed errors.
func TestClosedAfterServerEnded(t *testing.T) {
	t.Parallel()
	s, err := mcptest.Start(t.Context(), target(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(t.Context(), wire.MethodToolsCall, call("close-stdout", nil)); err == nil {
		t.Fatal("a call the server answered by closing stdout succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	err = s.Ping(t.Context())
	if !errors.Is(err, mcptest.ErrClosed) || !strings.Contains(err.Error(), "closed its stdout") {
		t.Errorf("Ping after Close = %v, want ErrClosed saying the server had closed its stdout", err)
	}
}

// TestInProcessPanic: a panicking ServeFunc ends the server, not the test
// binary; the panic and its stack are the exit's error and the session's.
func TestInProcessPanic(t *testing.T) {
	t.Parallel()
	serve := func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		buf := make([]byte, 1)
		in.Read(buf) // the first request
		panic("boom in the server")
	}
	s := mcptest.StartServer(t, mcptest.InProcess(serve), mcptest.WithoutHandshake())
	_, err := s.Call(t.Context(), wire.MethodPing, nil)
	if err == nil || !strings.Contains(err.Error(), "boom in the server") {
		t.Errorf("Call to a server that panicked = %v, want the panic in the error", err)
	}
	ex, err := s.WaitExit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ex.How != mcptest.ExitPanicked || ex.Err == nil || !strings.Contains(ex.Err.Error(), "boom in the server") || !strings.Contains(ex.Err.Error(), "TestInProcessPanic") {
		t.Errorf("Exit = %v; want How panicked and the panic with its stack in Err", ex)
	}
}

// TestHandlerPanic: a panic in a WithServerRequests handler is answered with
// -32603, and Close reports it with its stack; the session goes on.
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	h := func(ctx context.Context, req *wire.Message) (any, error) { panic("boom in the handler") }
	s, err := mcptest.Start(ctx, target(t, false), mcptest.WithServerRequests(h))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Call(ctx, wire.MethodToolsCall, call("ping-host", nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, r); !strings.Contains(got, `"code":-32603`) || !strings.Contains(got, "boom in the handler") {
		t.Errorf("the host's answer to the server's ping = %s, want -32603 naming the panic", got)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the handler panicked: %v", err)
	}
	err = s.Close()
	if err == nil || !strings.Contains(err.Error(), "boom in the handler") || !strings.Contains(err.Error(), "TestHandlerPanic") {
		t.Errorf("Close = %v, want the handler's panic with its stack", err)
	}
}

// TestOptionValues: zero means the default; a negative value makes Start
// fail naming the option.
func TestOptionValues(t *testing.T) {
	t.Parallel()
	zero := []mcptest.Option{mcptest.WithGrace(0), mcptest.WithTimeout(0), mcptest.WithProbeTimeout(0),
		mcptest.WithMaxFrame(0), mcptest.WithPipeCapacity(0), mcptest.Limits{},
		mcptest.WithProtocolVersion(""), mcptest.WithServerRequests(nil), mcptest.WithStderr(nil), nil}
	s := mcptest.StartServer(t, target(t, false), zero...)
	if _, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "defaults"}); err != nil {
		t.Errorf("a call with every option at zero: %v", err)
	}
	bad := map[string]mcptest.Option{
		"Grace(-1s)":                    mcptest.WithGrace(-time.Second),
		"WithTimeout(-1ns)":             mcptest.WithTimeout(-1),
		"ProbeTimeout(-1ms)":            mcptest.WithProbeTimeout(-time.Millisecond),
		"WithMaxFrame(-5)":              mcptest.WithMaxFrame(-5),
		"WithPipeCapacity(-4096)":       mcptest.WithPipeCapacity(-4096),
		"Limits.Junk = -1":              mcptest.Limits{Junk: -1},
		"Limits.NotificationBytes = -1": mcptest.Limits{NotificationBytes: -1},
		`WithProtocolVersion("latest")`: mcptest.WithProtocolVersion("latest"),
	}
	for name, o := range bad {
		s, err := mcptest.Start(t.Context(), target(t, false), o)
		if err == nil {
			s.Close()
			t.Errorf("Start with %s succeeded, want an error naming the option", name)
			continue
		}
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Start with %s = %v, want an error naming the option", name, err)
		}
	}
	if _, err := mcptest.Start(t.Context(), nil); err == nil {
		t.Error("Start(nil target) succeeded")
	}
}

// TestIDMismatch: a response whose id equals a pending request's by value
// but not as JSON is unknown, and the request fails at once saying so; a
// batch and a frame with two "id" keys fail the request they name.
func TestIDMismatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		kind, want string
	}{
		{"string", `a response with id "%d" (a string) arrived; this request's id is %d (a number)`},
		{"float", `a response with id %d.0 (a number written differently) arrived; this request's id is %d (a number)`},
		{"exp", `a response with id %de0 (a number written differently) arrived; this request's id is %d (a number)`},
		{"batch", `inside a JSON-RPC batch (1 messages)`},
		{"dup", `duplicate envelope key`},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			testkit.EachWay(t, func(t *testing.T, child bool) {
				s := mcptest.StartServer(t, target(t, child))
				start := time.Now()
				p := s.Send(wire.MethodToolsCall, call("badid", map[string]any{"kind": c.kind}))
				_, err := p.Wait(t.Context())
				want := c.want
				if strings.Contains(want, "%d") {
					want = fmt.Sprintf(want, p.ID(), p.ID())
				}
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("Wait = %v, want an error saying %s", err, want)
				}
				if d := time.Since(start); d > 5*time.Second {
					t.Errorf("failed after %v, want at once", d)
				}
				st := s.Stats()
				switch c.kind {
				case "batch":
					if st.Batches != 1 || st.ProtocolViolations != 1 {
						t.Errorf("Stats: Batches %d, ProtocolViolations %d; want 1, 1", st.Batches, st.ProtocolViolations)
					}
				case "dup":
					if st.ParseErrors != 1 || st.ProtocolViolations != 1 {
						t.Errorf("Stats: ParseErrors %d, ProtocolViolations %d; want 1, 1", st.ParseErrors, st.ProtocolViolations)
					}
				default:
					if st.UnknownIDs != 1 {
						t.Errorf("Stats.UnknownIDs = %d, want 1", st.UnknownIDs)
					}
				}
				if err := s.Ping(t.Context()); err != nil {
					t.Errorf("Ping after: %v", err)
				}
			})
		})
	}
}

// TestDuplicateIDOneRule: a frame with two "id" keys fails the request named
// by the first, whether it is small (parsed) or over the limit (scanned).
func TestDuplicateIDOneRule(t *testing.T) {
	t.Parallel()
	for _, size := range []int{10, 200 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, false), mcptest.WithMaxFrame(100<<10))
			p := s.Send(wire.MethodToolsCall, call("badid", map[string]any{"kind": "dup-oversized", "size": size}))
			_, err := p.Wait(t.Context())
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("id=%d", p.ID())) {
				t.Errorf("Wait = %v, want the request named by the first id to fail", err)
			}
		})
	}
}

// TestCallTool decodes a tool result.
func TestCallTool(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, target(t, false))
	r, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Text != "hi" || r.IsError || !strings.Contains(string(r.Raw), `"text":"hi"`) {
		t.Errorf("CallTool = %+v, want text hi", r)
	}
	if _, err := s.CallTool(t.Context(), "no-such-tool", nil); err == nil {
		t.Error("CallTool of an unknown tool (the test server answers -32602) succeeded")
	}
}

// TestGoBuild builds a main package once and runs it.
func TestGoBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a binary with the go command")
	}
	for range 2 { // the second is served from the first build
		s := mcptest.StartServer(t, mcptest.GoBuild(t, "./testdata/echoserver"))
		r, err := s.CallTool(t.Context(), "echo", map[string]any{"text": "built"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(r.Text, "built") {
			t.Errorf("result %q", r.Text)
		}
	}
}
