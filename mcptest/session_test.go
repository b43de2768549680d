package mcptest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

func call(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

func resultText(t *testing.T, r *mcptest.Response) string {
	t.Helper()
	var v struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(r.Result, &v); err != nil || len(v.Content) == 0 {
		t.Fatalf("result %.200s: not a text result: %v", r.Result, err)
	}
	return v.Content[0].Text
}

// TestBlockedWriter reproduces the blocked server of the article this project
// grew from: host reads stop while a naive server writes a big response
// (8 MiB, 2 MiB under -race) in one Write.
func TestBlockedWriter(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		s.StallReads()
		p := s.Send(wire.MethodToolsCall, call("big", map[string]any{"size": big}))
		if err := s.WaitWriterBlocked(ctx); err != nil {
			t.Fatal(err)
		}
		ev := s.Stats().WriterEvidence
		if !ev.PipeFull && len(ev.Threads) == 0 {
			t.Fatalf("WaitWriterBlocked returned without evidence: %+v", ev)
		}
		t.Logf("evidence: %s", ev)
		if s.Stats().Exit.How != "" {
			t.Fatalf("server ended while blocked:\n%s", s.Diagnose())
		}
		select {
		case <-p.Done():
			t.Fatalf("response complete while reads were stalled")
		default:
		}
		if d := s.Diagnose(); !strings.Contains(d, "blocked writing stdout") {
			t.Errorf("Diagnose does not say the server is blocked writing:\n%s", d)
		}
		s.ResumeReads()
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Counting bytes: decoding megabytes again is slow under -race.
		if got := bytes.Count(r.Result, bytes.Repeat([]byte("x"), 1024)); got != big/1024 {
			t.Errorf("response holds %d KiB of payload, want %d", got, big/1024)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.LargestFrame <= big {
			t.Errorf("Stats.LargestFrame = %d, want > %d", st.LargestFrame, big)
		}
		if st.StdoutFullTime <= 0 {
			t.Errorf("Stats.StdoutFullTime = %v, want > 0", st.StdoutFullTime)
		}
	})
}

// TestBlockedWriterOverLimit: the same big response with a 1 MiB limit
// fails its own request with *pipes.FrameTooLargeError, and the session
// goes on.
func TestBlockedWriterOverLimit(t *testing.T) {
	t.Parallel()
	for _, idLast := range []bool{false, true} {
		t.Run(map[bool]string{false: "id-first", true: "id-last"}[idLast], func(t *testing.T) {
			testkit.EachWay(t, func(t *testing.T, child bool) {
				ctx := t.Context()
				s := mcptest.StartServer(t, target(t, child), mcptest.WithMaxFrame(1<<20))
				s.StallReads()
				p := s.Send(wire.MethodToolsCall, call("big", map[string]any{"size": big, "idLast": idLast}))
				if err := s.WaitWriterBlocked(ctx); err != nil {
					t.Fatal(err)
				}
				s.ResumeReads()
				_, err := p.Wait(ctx)
				var tl *pipes.FrameTooLargeError
				if !errors.As(err, &tl) {
					t.Fatalf("Wait error = %v, want *pipes.FrameTooLargeError", err)
				}
				if tl.Size <= big || tl.Limit != 1<<20 {
					t.Errorf("FrameTooLargeError{Size: %d, Limit: %d}, want Size > %d, Limit %d", tl.Size, tl.Limit, big, 1<<20)
				}
				if err := s.Ping(ctx); err != nil {
					t.Fatal(err)
				}
				if st := s.Stats(); st.OversizedFrames != 1 || st.DiscardedBytes != tl.Size {
					t.Errorf("Stats: OversizedFrames %d, DiscardedBytes %d; want 1, %d", st.OversizedFrames, st.DiscardedBytes, tl.Size)
				}
			})
		})
	}
}

func TestNegotiation(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		t.Run("legacy", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "legacy"))
			if v := s.ProtocolVersion(); v != wire.Version20251125 {
				t.Errorf("ProtocolVersion() = %q, want %q", v, wire.Version20251125)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("modern", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "modern"))
			if v := s.ProtocolVersion(); v != wire.Version20260728 {
				t.Errorf("ProtocolVersion() = %q, want %q", v, wire.Version20260728)
			}
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			// The server refuses tools/call without _meta: Call adds it.
			r, err := s.Call(ctx, wire.MethodToolsCall, call("echo", map[string]any{"text": "hi"}))
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, r); got != "hi" {
				t.Errorf("echo = %q, want hi", got)
			}
		})
		t.Run("silent-probe", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "silent-probe"), mcptest.WithProbeTimeout(300*time.Millisecond))
			if v := s.ProtocolVersion(); v != wire.Version20251125 {
				t.Errorf("ProtocolVersion() = %q, want %q", v, wire.Version20251125)
			}
			if !transcriptHas(s, "no answer to server/discover") {
				t.Errorf("transcript does not show the probe timing out:\n%s", s.Diagnose())
			}
		})
		t.Run("pinned-legacy", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "legacy"), mcptest.WithProtocolVersion(wire.Version20250618))
			if v := s.ProtocolVersion(); v != wire.Version20250618 {
				t.Errorf("ProtocolVersion() = %q, want %q", v, wire.Version20250618)
			}
			if transcriptHas(s, wire.MethodDiscover) {
				t.Errorf("pinned session probed server/discover")
			}
		})
		t.Run("pinned-modern", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "modern"), mcptest.WithProtocolVersion(wire.Version20260728))
			if err := s.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); st.Requests != 1 {
				t.Errorf("Stats.Requests = %d, want 1 (the Ping; no handshake)", st.Requests)
			}
		})
		t.Run("without-handshake", func(t *testing.T) {
			s := mcptest.StartServer(t, target(t, child, "modern"), mcptest.WithoutHandshake())
			if v := s.ProtocolVersion(); v != "" {
				t.Errorf("ProtocolVersion() = %q without a handshake, want \"\"", v)
			}
			if st := s.Stats(); st.StdinBytes != 0 {
				t.Errorf("Stats.StdinBytes = %d without a handshake, want 0", st.StdinBytes)
			}
		})
	})
}

func transcriptHas(s *mcptest.Session, sub string) bool {
	for _, e := range s.Transcript() {
		if bytes.Contains(e.Head, []byte(sub)) {
			return true
		}
	}
	return false
}

func TestJunkOnStdout(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child))
		r, err := s.Call(t.Context(), wire.MethodToolsCall, call("junk", nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, r); got != "after junk" {
			t.Errorf("result %q, want %q", got, "after junk")
		}
		if st := s.Stats(); st.JunkLines != 1 {
			t.Errorf("Stats.JunkLines = %d, want 1", st.JunkLines)
		}
		if d := s.Diagnose(); !strings.Contains(d, `junk on stdout (last 1): "server starting... this is a log line on stdout"`) {
			t.Errorf("Diagnose does not show the junk line:\n%s", d)
		}
	})
}

func TestStderrFlood(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		const n = 64 << 20
		s := mcptest.StartServer(t, target(t, child, "stderr="+itoa(n)))
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.StderrBytes != n {
			t.Errorf("Stats.StderrBytes = %d, want %d", st.StderrBytes, n)
		}
		if got := len(s.Stderr()); got > 70<<10 {
			t.Errorf("Stderr() kept %d bytes, want it bounded", got)
		}
	})
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { b, _ := json.Marshal(n); return string(b) }())
}

func TestLateResponse(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		p := s.Send(wire.MethodToolsCall, call("wait-cancel", nil))
		if err := p.Cancel("test"); err != nil {
			t.Fatal(err)
		}
		r, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Late {
			t.Errorf("Response.Late = false after Cancel")
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.LateResponses != 1 || st.CancelsSent != 1 {
			t.Errorf("Stats: LateResponses %d, CancelsSent %d; want 1, 1", st.LateResponses, st.CancelsSent)
		}
	})
}

func TestUnknownID(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child))
		r, err := s.Call(t.Context(), wire.MethodToolsCall, call("unknown-id", nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := resultText(t, r); got != "real" {
			t.Errorf("result %q, want real", got)
		}
		if st := s.Stats(); st.UnknownIDs != 1 {
			t.Errorf("Stats.UnknownIDs = %d, want 1", st.UnknownIDs)
		}
	})
}

func TestServerPing(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child))
		r, err := s.Call(t.Context(), wire.MethodToolsCall, call("ping-host", nil))
		if err != nil {
			t.Fatal(err)
		}
		var reply wire.Message
		if err := json.Unmarshal([]byte(resultText(t, r)), &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error != nil || string(reply.Result) != "{}" {
			t.Errorf("host answered the server's ping with %+v, want result {}", reply)
		}
		if st := s.Stats(); st.ServerRequests != 1 || st.ProtocolViolations != 0 {
			t.Errorf("Stats: ServerRequests %d, ProtocolViolations %d; want 1, 0", st.ServerRequests, st.ProtocolViolations)
		}
	})
}

func TestNotifications(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		if _, err := s.Call(ctx, wire.MethodToolsCall, call("notify", map[string]any{"text": "hello"})); err != nil {
			t.Fatal(err)
		}
		m, err := s.WaitNotification(ctx, wire.MethodMessage)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(m.Params, []byte("hello")) {
			t.Errorf("notification params %s, want hello", m.Params)
		}
	})
}

func TestCloseEscalation(t *testing.T) {
	t.Parallel() // it waits (graces, bounds): side by side with the other waiting tests
	cases := []struct {
		name  string
		child bool
		opts  []string
		how   mcptest.ExitHow
		last  string        // the signal that ended it
		grace time.Duration // long where the server ends by itself: it costs nothing then
	}{
		{"exits-on-eof/in-process", false, nil, mcptest.ExitAfterStdinClose, "", 10 * time.Second},
		{"exits-on-eof/child", true, nil, mcptest.ExitAfterStdinClose, "", 10 * time.Second},
		{"ignores-eof/in-process", false, []string{"ignore-eof"}, mcptest.ExitAfterStdinClose, "", 10 * time.Second},
		{"ignores-eof/child", true, []string{"ignore-eof"}, mcptest.ExitForced, "SIGTERM", 300 * time.Millisecond},
		{"ignores-sigterm/child", true, []string{"ignore-eof", "ignore-sigterm"}, mcptest.ExitForced, "SIGQUIT", time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s, err := mcptest.Start(t.Context(), target(t, c.child, c.opts...), mcptest.WithGrace(c.grace))
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			st := s.Stats()
			last := ""
			if n := len(st.Exit.Signals); n > 0 {
				last = st.Exit.Signals[n-1]
			}
			if st.Exit.How != c.how || last != c.last {
				t.Errorf("after Close: Exit %v; want How %q, last signal %q", st.Exit, c.how, c.last)
			}
			if c.last == "SIGQUIT" && !bytes.Contains(s.Stderr(), []byte("goroutine ")) {
				t.Errorf("no goroutine dump in stderr after SIGQUIT:\n%s", s.Stderr())
			}
		})
	}
}

// TestCloseStuckInProcess: an in-process server that ignores its context
// and its pipes is reported with its stack, not waited for forever.
func TestCloseStuckInProcess(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	returned := make(chan struct{})
	stuck := func(ctx context.Context, in io_ReadCloser, out io_WriteCloser, _ io_Writer) error {
		defer close(returned)
		<-release
		return nil
	}
	s, err := mcptest.Start(t.Context(), mcptest.InProcess(stuck), mcptest.WithoutHandshake(), mcptest.WithGrace(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	err = s.Close()
	close(release)
	<-returned
	if err == nil || !strings.Contains(err.Error(), "did not return") || !strings.Contains(err.Error(), "TestCloseStuckInProcess") {
		t.Fatalf("Close() = %v, want a report naming the stuck server and its stack", err)
	}
	if st := s.Stats(); st.Exit.How != mcptest.ExitStuck {
		t.Errorf("Exit.How = %q, want stuck", st.Exit.How)
	}
}

func TestStdoutClosedEarly(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child), mcptest.WithGrace(200*time.Millisecond))
		_, err := s.Call(t.Context(), wire.MethodToolsCall, call("close-stdout", nil))
		if err == nil || !strings.Contains(err.Error(), "closed its stdout") {
			t.Fatalf("Call = %v, want an error saying the server closed its stdout", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExitMidFrame(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child))
		_, err := s.Call(t.Context(), wire.MethodToolsCall, call("exit-mid-frame", nil))
		if err == nil || !strings.Contains(err.Error(), "closed its stdout") && !errors.Is(err, pipes.ErrValveClosed) {
			t.Logf("Call error: %v", err)
		}
		if err == nil {
			t.Fatal("Call succeeded against a server that exited mid-frame")
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.DiscardedBytes == 0 || st.Exit.How != mcptest.ExitOnItsOwn {
			t.Errorf("Stats: DiscardedBytes %d, Exit %v; want the lost bytes counted and exited", st.DiscardedBytes, st.Exit)
		}
		if !transcriptHas(s, "input ended inside a frame") {
			t.Errorf("transcript does not note the truncated frame:\n%s", s.Diagnose())
		}
	})
}

// TestStdinNotRead: writes to a server that never reads stdin fail in
// bounded time, saying so.
func TestStdinNotRead(t *testing.T) {
	t.Parallel() // it waits (graces, bounds): side by side with the other waiting tests
	if runtime.GOOS != "linux" {
		t.Skip("WithPipeCapacity needs Linux F_SETPIPE_SZ")
	}
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child, "no-read"), mcptest.WithoutHandshake(),
			mcptest.WithPipeCapacity(4096), mcptest.WithTimeout(500*time.Millisecond), mcptest.WithGrace(200*time.Millisecond))
		p := s.Send(wire.MethodToolsCall, call("echo", map[string]any{"text": strings.Repeat("a", 64<<10)}))
		_, err := p.Wait(t.Context())
		if err == nil || !strings.Contains(err.Error(), "stopped reading stdin") || !strings.Contains(err.Error(), "(full)") {
			t.Fatalf("Wait = %v, want an error saying the server stopped reading stdin, with the pipe full", err)
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error does not wrap context.DeadlineExceeded: %v", err)
		}
	})
}

// TestStartCloseCycles: 100 sessions leak no descriptor and no process
// (goroutines are checked by goleak in TestMain).
func TestStartCloseCycles(t *testing.T) {
	countFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("counting descriptors needs /proc (Linux): %v", err)
		}
		return len(ents)
	}
	ctx := t.Context()
	// One warm-up cycle of each kind, so lazily opened descriptors
	// (the executable, epoll) are there before counting.
	for _, child := range []bool{false, true} {
		s := mcptest.StartServer(t, target(t, child))
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Under the race detector a child costs ten times the CPU to start:
	// 20 cycles there, 100 without it (CI runs it so, .ci/run).
	cycles := 100
	if raceEnabled {
		cycles = 20
	}
	before := countFDs()
	for i := range cycles {
		child := i%2 == 1
		s, err := mcptest.Start(ctx, target(t, child))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		pid := s.PID()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if child {
			if err := processGone(pid); err != nil {
				t.Fatalf("cycle %d: %v", i, err)
			}
		}
	}
	if after := countFDs(); after != before {
		t.Errorf("open descriptors: %d before %d cycles, %d after", before, cycles, after)
	}
}

// TestResponseOffset checks that a response's Offset is where its frame
// began on the server's stdout, for short responses too (they are not
// scanned as they arrive), against the frames the transcript lists.
func TestResponseOffset(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, target(t, false))
	for i := range 3 {
		resp, err := s.Call(t.Context(), "ping", nil)
		if err != nil {
			t.Fatal(err)
		}
		var off int64
		found := false
		for _, e := range s.Transcript() {
			if e.Dir != "←" {
				continue
			}
			if off == resp.Offset && e.Size == resp.Size {
				found = true
				break
			}
			off += e.Size + 1 // the test server ends its lines with "\n" alone
		}
		if !found {
			t.Errorf("ping %d: response at Offset %d, Size %d; no frame the server wrote begins there (transcript: %d bytes before the last)", i, resp.Offset, resp.Size, off)
		}
	}
}
