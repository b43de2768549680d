package proxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/pipes"
)

// proxied is a proxy started by mcptest as an in-process server: mcptest
// is the host, on real pipes, and the proxy runs a helper child.
type proxied struct {
	rec *recSink
	ch  chan *proxy.Proxy
	p   *proxy.Proxy
}

// throughProxy returns a target that runs the helper name behind a proxy
// configured by cfg.
func throughProxy(t *testing.T, cfg proxy.Config, name string, args ...string) (mcptest.Target, *proxied) {
	h := &proxied{rec: newRecSink(), ch: make(chan *proxy.Proxy, 1)}
	cfg.Record = h.rec
	t.Cleanup(func() {
		if h.rec.bad != nil {
			t.Error(h.rec.bad)
		}
	})
	// Here, not in the server: the first helper under the race detector
	// builds the binary it runs from, which must not count against the
	// session's handshake.
	mustHelper(ctxFor(t), name, args...)
	return mcptest.InProcess(func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		p, err := proxy.Start(ctx, mustHelper(ctx, name, args...), proxy.Streams{Stdin: stdin, Stdout: stdout, Stderr: stderr}, cfg)
		if err != nil {
			return err
		}
		h.ch <- p
		_, err = p.Wait()
		return err
	}), h
}

// proxy returns the running proxy.
func (h *proxied) proxy(t *testing.T) *proxy.Proxy {
	t.Helper()
	if h.p == nil {
		select {
		case h.p = <-h.ch:
		case <-time.After(bound(t)):
			t.Fatal("the proxy did not start")
		}
	}
	return h.p
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), bound(t))
	t.Cleanup(cancel)
	return ctx
}

func bigCall(n int) map[string]any {
	return map[string]any{"name": fakeserver.ToolBig, "arguments": fakeserver.BigArgs{Bytes: n}.Map()}
}

// TestHostStallBlocksServer: with mcptest as the host stalling its reads
// at the read(2) level, the real server behind the proxy blocks in its
// write within the proxy's stated extra buffering (the server's stdout
// pipe plus one chunk; on the splice path, the server's pipe alone), and
// the verdict says who is not reading, on each forwarding path.
func TestHostStallBlocksServer(t *testing.T) { onEachPath(t, testHostStallBlocksServer) }

func testHostStallBlocksServer(t *testing.T, path string) {
	const pipeSize, chunk = 16 << 10, 16 << 10
	report := filepath.Join(t.TempDir(), "report.json")
	cfg := proxy.Config{PipeCapacity: pipeSize, ChunkSize: chunk, Stuck: 50 * time.Millisecond}
	if _, err := (&pipes.Pipe{}).SetCapacity(1); errors.Is(err, errors.ErrUnsupported) {
		cfg.PipeCapacity = 0
	}
	target, h := throughProxy(t, cfg, "fake", "-report", report)
	var hostOpts []mcptest.Option
	if cfg.PipeCapacity > 0 {
		hostOpts = append(hostOpts, mcptest.WithPipeCapacity(pipeSize))
	}
	s := mcptest.StartServer(t, target, hostOpts...)
	ctx := ctxFor(t)
	p := h.proxy(t)

	s.StallReads()
	big := s.Send("tools/call", bigCall(8<<20))
	if err := s.WaitWriterBlocked(ctx); err != nil {
		t.Fatal(err)
	}
	h.rec.wait(t, "block of the host's stdout", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirOut })
	// A verdict may come first that names no response: with a core busy
	// the observer can still have the response's head unread in its pipe
	// when the write has been stuck long enough, and says only what it
	// has seen. Once it reads the head, a verdict names the call (a
	// verdict is recorded once per kind and id).
	// On a loaded machine the observer can instead lose the head (a drop
	// event on the server's stdout): it then cannot name the call, and the
	// record says it lost detail rather than claiming anything.
	isHostNotReading := verdictOf(record.VerdictHostNotReading)
	v := h.rec.wait(t, "host-not-reading verdict naming tools/call big (or a drop on stdout)", func(e record.Event) bool {
		return isHostNotReading(e) && strings.Contains(e.Verdict.Text, "tools/call big") || e.Ev == record.EvDrop && e.Dir == record.DirOut
	})
	if v.Ev == record.EvDrop {
		t.Logf("the observer lost detail of the server's stdout before it read the response's head: %+v", v)
		v = h.rec.wait(t, "host-not-reading verdict", isHostNotReading)
	}
	if !strings.HasPrefix(v.Verdict.Text, "host is not reading the server's output") {
		t.Errorf("verdict %q does not say the host is not reading", v.Verdict.Text)
	}

	if cfg.PipeCapacity == 0 {
		t.Log("pipe capacity cannot be set here: the bound on the server's output is not checked")
	} else {
		// Nothing reports the moment the server's write blocks but the
		// pipe it writes: poll its fill level (kernel state), bounded.
		srv := p.ServerStdout()
		poll.Wait(t, bound(t), "the server's stdout pipe full", func() bool { full, _ := srv.Full(); return full }, func() string {
			b, _ := srv.Buffered()
			return fmt.Sprintf("%d of %d bytes", b, srv.Capacity())
		})
		rep, err := fakeserver.ReadReportFile(report)
		if err != nil {
			t.Fatal(err)
		}
		received := s.Stats().StdoutBytes
		// What the server wrote is what the host received, plus the host's
		// pipe, the proxy's one chunk and the server's pipe; splice holds
		// no chunk.
		extra := int64(pipeSize + chunk + srv.Capacity())
		if path == "splice" {
			extra = int64(pipeSize + srv.Capacity())
		}
		if rep.StdoutBytes > received+extra {
			t.Errorf("the server wrote %d bytes while the host received %d: more than the %d bytes of buffering the proxy states", rep.StdoutBytes, received, extra)
		}
		if n := len(rep.Requests); n == 0 || rep.Requests[n-1].State == fakeserver.StateDone {
			t.Errorf("the server's big call is done, want it blocked writing: %+v", rep.Requests)
		}
		t.Logf("blocked: server wrote %d (report), host received %d, stated extra buffering %d", rep.StdoutBytes, received, extra)
	}

	s.ResumeReads()
	resp, err := big.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Result) < 8<<20 {
		t.Errorf("response of %d bytes, want over 8 MiB", len(resp.Result))
	}
	h.rec.wait(t, "unblock of the host's stdout", func(e record.Event) bool { return e.Ev == record.EvUnblock && e.Dir == record.DirOut })
	if got := p.Spliced(int(proxy.DOut)); path == "splice" && got < 8<<20 || path == "copy" && got != 0 {
		t.Errorf("forced onto %s, the server's stdout spliced %d bytes", path, got)
	}
}

// verdictScenario runs a scenario against a helper behind the proxy, with
// mcptest as the host, and returns the first verdict of kind whose text
// has about in it (on a loaded machine, the handshake itself can be slow
// enough for a verdict about it).
func verdictScenario(t *testing.T, cfg proxy.Config, kind, about string, helper []string, hostOpts []mcptest.Option, scenario func(*mcptest.Session, *proxied)) record.Verdict {
	t.Helper()
	if cfg.Stuck == 0 {
		cfg.Stuck = 50 * time.Millisecond
	}
	if cfg.Unanswered == 0 {
		cfg.Unanswered = 200 * time.Millisecond
	}
	target, h := throughProxy(t, cfg, helper[0], helper[1:]...)
	s := mcptest.StartServer(t, target, hostOpts...)
	scenario(s, h)
	return *h.rec.wait(t, kind+" verdict about "+about, func(e record.Event) bool {
		return verdictOf(kind)(e) && strings.Contains(e.Verdict.Text, about)
	}).Verdict
}

func wantText(t *testing.T, v record.Verdict, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(v.Text, p) {
			t.Errorf("verdict %s %q does not say %q", v.Kind, v.Text, p)
		}
	}
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	t.Run("server-not-reading", func(t *testing.T) {
		// The naive server blocks writing a big response the host does not
		// read, and so stops reading its stdin: a large request stays
		// unwritten.
		sent := make(chan *mcptest.Pending, 1)
		var s *mcptest.Session
		v := verdictScenario(t, proxy.Config{ChunkSize: 16 << 10}, record.VerdictServerNotReading, "", []string{"fake", "-naive"}, nil, func(ss *mcptest.Session, h *proxied) {
			s = ss
			s.StallReads()
			s.Send("tools/call", bigCall(4<<20))
			if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
			// Send returns once the request is written, which it cannot be.
			go func() {
				sent <- s.Send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", 256<<10)}})
			}()
		})
		wantText(t, v, "server is not reading its stdin for", "request unwritten: id", "(tools/call, ", "of it read from the host so far)")
		s.ResumeReads()
		if _, err := (<-sent).Wait(ctxFor(t)); err != nil {
			t.Errorf("after the host resumed reading, the echo call failed: %v", err)
		}
	})
	t.Run("unanswered", func(t *testing.T) {
		// The server took what the host wrote after the call (a ping,
		// answered): it reads stdin. The verdict is recorded when it first
		// appears: Unanswered leaves the ping time to be answered first.
		v := verdictScenario(t, proxy.Config{Unanswered: 2 * time.Second}, record.VerdictUnanswered, "tools/call slow", []string{"fake"}, nil, func(s *mcptest.Session, h *proxied) {
			s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 2, "intervalMs": 600000}})
			if err := s.Ping(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
		})
		wantText(t, v, "server has not answered id", "(tools/call slow) for", "it reads stdin (it took all written to it since", "its stdout is idle")
	})
	t.Run("unanswered-nothing-since", func(t *testing.T) {
		// Nothing was written to the server after the call: whether it
		// reads its stdin is not known.
		v := verdictScenario(t, proxy.Config{}, record.VerdictUnanswered, "tools/call slow", []string{"fake"}, nil, func(s *mcptest.Session, h *proxied) {
			s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 2, "intervalMs": 600000}})
		})
		wantText(t, v, "server has not answered id", "whether it reads stdin now is unknown: nothing was written to it since")
		if strings.Contains(v.Text, "; it reads stdin") {
			t.Errorf("verdict %q says the server reads stdin, with no evidence", v.Text)
		}
	})
	t.Run("unanswered-unread", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("pipe levels (FIONREAD) are Linux only")
		}
		// The naive server is blocked writing a response the host does
		// not read; the ping written after it waits in its stdin pipe,
		// unread. Its big call's response is under way: not unanswered
		// (Unanswered gives a loaded machine time to read its start).
		var rec *recSink
		v := verdictScenario(t, proxy.Config{Unanswered: 2 * time.Second}, record.VerdictUnanswered, "(ping)", []string{"fake", "-naive"}, nil, func(s *mcptest.Session, h *proxied) {
			rec = h.rec
			s.StallReads()
			s.Send("tools/call", bigCall(4<<20))
			if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
			s.Send("ping", nil)
		})
		wantText(t, v, "server has not answered id", "(ping) for", "it has not read the request: it is among the")
		for _, e := range rec.find(verdictOf(record.VerdictUnanswered)) {
			if strings.Contains(e.Verdict.Text, "tools/call big") {
				t.Errorf("verdict %q: the big call's response is under way", e.Verdict.Text)
			}
		}
	})
	t.Run("cancel-ignored", func(t *testing.T) {
		v := verdictScenario(t, proxy.Config{}, record.VerdictCancelIgnored, "", []string{"fake", "-ignore-cancel"}, nil, func(s *mcptest.Session, h *proxied) {
			call := s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 1000, "intervalMs": 5}, "_meta": map[string]any{"progressToken": "tok"}})
			h.rec.wait(t, "progress", func(e record.Event) bool { return e.Ev == record.EvFrame && e.Method == "notifications/progress" })
			if err := call.Cancel("test"); err != nil {
				t.Fatal(err)
			}
		})
		wantText(t, v, "cancel for id", "(tools/call slow) forwarded to the server at", "the server went on sending progress for")
	})
	t.Run("late", func(t *testing.T) {
		// The server ignores the cancel and answers about 300ms later: well
		// after the cancel was written to it, whatever the scheduler does.
		v := verdictScenario(t, proxy.Config{}, record.VerdictCancelIgnored, "", []string{"fake", "-ignore-cancel"}, nil, func(s *mcptest.Session, h *proxied) {
			call := s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 3, "intervalMs": 100}})
			f := h.rec.wait(t, "the call", func(e record.Event) bool {
				return e.Ev == record.EvFrame && e.Dir == record.DirIn && e.Method == "tools/call"
			})
			h.rec.wait(t, "the call written", func(e record.Event) bool {
				return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.Off+e.N > f.Off+f.N && e.WT > 0
			})
			if err := call.Cancel("test"); err != nil {
				t.Fatal(err)
			}
			if _, err := call.Wait(ctxFor(t)); err != nil {
				t.Fatal(err)
			}
		})
		wantText(t, v, "its response (", "began", "after the cancel")
	})
	t.Run("no-tool-call", func(t *testing.T) {
		v := verdictScenario(t, proxy.Config{}, record.VerdictNoToolCall, "", []string{"fake"}, nil, func(s *mcptest.Session, h *proxied) {})
		wantText(t, v, "host never sent tools/call in", "it sent: server/discover")
	})
	t.Run("idle", func(t *testing.T) {
		v := verdictScenario(t, proxy.Config{}, record.VerdictIdle, "tools/call echo", []string{"fake"}, nil, func(s *mcptest.Session, h *proxied) {
			if _, err := s.Call(ctxFor(t), "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}); err != nil {
				t.Fatal(err)
			}
		})
		wantText(t, v, "nothing is waiting in the proxy: the last response (id", "tools/call echo", "was delivered to the host")
	})
	t.Run("stdout-junk", func(t *testing.T) {
		v := verdictScenario(t, proxy.Config{}, record.VerdictJunk, "", []string{"fake", "-banner", "hello from the server"}, nil, func(s *mcptest.Session, h *proxied) {})
		wantText(t, v, `1 line on stdout that is not JSON-RPC (first: "hello from the server")`)
	})
	t.Run("unknown-response", func(t *testing.T) {
		v := verdictScenario(t, proxy.Config{}, record.VerdictUnknownResponse, "", []string{"script", `{"jsonrpc":"2.0","id":99,"result":{}}`}, []mcptest.Option{mcptest.WithoutHandshake()}, func(s *mcptest.Session, h *proxied) {})
		wantText(t, v, "1 response to ids the host had not sent", "first: id 99")
	})
}

// TestVerdictStderrBlocked: a server that writes more stderr than the
// pipes hold blocks when the host does not read its stderr.
func TestVerdictStderrBlocked(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake", "-stderr-noise", "1048576"), proxy.Config{Stuck: 50 * time.Millisecond})
	v := r.rec.wait(t, "stderr-blocked verdict", verdictOf(record.VerdictStderrBlocked))
	wantText(t, *v.Verdict, "server blocked writing stderr, which the host does not read", "has been blocked for")
	drain(t, r.stderr)
	r.stdin.Close()
	drain(t, r.stdout)
	r.wait()
}

// TestVerdictExited: a server that exits in the middle of a response
// leaves its request unanswered, and the line cut off is recorded as such.
func TestVerdictExited(t *testing.T) {
	t.Parallel()
	target, h := throughProxy(t, proxy.Config{}, "fake", "-exit-after-bytes", "100000")
	s := mcptest.StartServer(t, target)
	s.Send("tools/call", bigCall(1<<20))
	v := h.rec.wait(t, "exited verdict", verdictOf(record.VerdictExited))
	wantText(t, *v.Verdict, "the server ended (exit status", "with 1 request unanswered: id", "(tools/call big)")
	h.rec.wait(t, "unterminated frame", func(e record.Event) bool { return e.Ev == record.EvFrame && e.Dir == record.DirOut && e.Unterminated })
}

// TestVerdictNoExit: the host closed stdin and the server goes on.
func TestVerdictNoExit(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake", "-ignore-eof"), proxy.Config{Stuck: 50 * time.Millisecond})
	drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Close()
	v := r.rec.wait(t, "no-exit verdict", verdictOf(record.VerdictNoExit))
	wantText(t, *v.Verdict, "the host closed the server's stdin", "ago; the server has not exited")
}

// TestVerdictStdoutClosed: a server that closed its stdout and runs on
// leaves a request unanswered: the verdict says its stdout is closed, not
// idle.
func TestVerdictStdoutClosed(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "exit", "close-stdout"), proxy.Config{Stuck: 50 * time.Millisecond, Unanswered: 200 * time.Millisecond})
	r.rec.wait(t, "the server's stdout ended", func(e record.Event) bool { return e.Ev == record.EvEOF && e.Dir == record.DirOut })
	io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n")
	v := r.rec.wait(t, "the unanswered verdict", verdictOf(record.VerdictUnanswered)).Verdict
	wantText(t, *v, "server has not answered id 1 (tools/call x)", "it closed its stdout", "ago and runs on")
	if strings.Contains(v.Text, "idle") {
		t.Errorf("verdict %q calls a closed stdout idle", v.Text)
	}
	r.stdin.Close()
	r.wait()
}
