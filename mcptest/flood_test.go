package mcptest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// untilDeadline bounds a session's waits by the test's deadline instead of
// the 10s default, for a flood that takes its time under -race on a loaded
// machine: the wait is for the response, however long the flood before it
// takes, and the test's deadline is its only bound.
func untilDeadline(t *testing.T) mcptest.Option {
	return mcptest.WithTimeout(bound.For(t, time.Hour))
}

// checkAccounting checks that every frame read from stdout is counted in
// exactly one of the kinds Stats lists.
func checkAccounting(t *testing.T, st mcptest.Stats) {
	t.Helper()
	if sum := st.Responses + st.UnknownIDs + st.Notifications + st.ServerRequests + st.ParseErrors + st.JunkLines + st.Batches; sum != st.Frames {
		t.Errorf("Stats: %d frames, but responses %d + unknown ids %d + notifications %d + server requests %d + parse errors %d + junk %d + batches %d = %d",
			st.Frames, st.Responses, st.UnknownIDs, st.Notifications, st.ServerRequests, st.ParseErrors, st.JunkLines, st.Batches, sum)
	}
}

// TestJunkBurstAtStart: a server that logs 5,000 lines on stdout before its
// first answer is survived with defaults, every line counted.
func TestJunkBurstAtStart(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		s := mcptest.StartServer(t, target(t, child, "junk=5000"))
		if err := s.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.JunkLines != 5000 || st.JunkDropped != 5000-64 {
			t.Errorf("Stats: JunkLines %d, JunkDropped %d; want 5000 and %d (64 kept)", st.JunkLines, st.JunkDropped, 5000-64)
		}
		if !strings.Contains(s.Diagnose(), `"starting up: step 5000 of 5000"`) {
			t.Errorf("Diagnose does not show the newest junk:\n%s", s.Diagnose())
		}
		checkAccounting(t, st)
	})
}

// TestResponseThenBurst: a response followed, in the same write, by 5,000
// notifications: the call succeeds every time and every notification is
// counted. Under the race detector 4 runs, else 20 (CI runs it so,
// .ci/run).
func TestResponseThenBurst(t *testing.T) {
	t.Parallel()
	runs := 20
	if raceEnabled {
		runs = 4
	}
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		for run := range runs {
			if _, err := s.Call(ctx, wire.MethodToolsCall, call("burst", map[string]any{"n": 5000})); err != nil {
				t.Fatalf("run %d: %v", run, err)
			}
		}
		// The reader is in order: once this is answered, every burst has
		// been dispatched.
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		st := s.Stats()
		if st.Notifications != int64(runs)*5000 {
			t.Errorf("Stats.Notifications = %d, want %d", st.Notifications, runs*5000)
		}
		checkAccounting(t, st)
	})
}

// TestNotificationFloodExact: 100,000 progress notifications (20,000 under
// the race detector, still many times what the stores keep; CI runs it at
// full size, .ci/run), then two calls: both succeed, and every notification
// is counted, by token too.
func TestNotificationFloodExact(t *testing.T) {
	t.Parallel()
	n := int64(100_000)
	if raceEnabled {
		n = 20_000
	}
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child), untilDeadline(t))
		p := s.Send(wire.MethodToolsCall, map[string]any{"name": "notes", "arguments": map[string]any{"n": n, "size": 150}, "_meta": map[string]any{"progressToken": "flood"}})
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := s.Call(ctx, wire.MethodToolsCall, call("echo", map[string]any{"text": "after"})); err != nil {
				t.Fatal(err)
			}
		}
		st := s.Stats()
		if st.Notifications != n || p.Progress() != n {
			t.Errorf("Stats.Notifications = %d, Progress() = %d; want %d sent = counted", st.Notifications, p.Progress(), n)
		}
		if st.NotificationsDropped != n-1024 {
			t.Errorf("Stats.NotificationsDropped = %d, want %d (1024 kept)", st.NotificationsDropped, n-1024)
		}
		// Every frame has its transcript entry; those beyond the newest 256
		// are dropped, and counted.
		tr := s.Transcript()
		if dropped, last := s.Stats().TranscriptDropped, tr[len(tr)-1].Seq; len(tr) != 256 || dropped != last+1-256 || dropped < n-256 {
			t.Errorf("Transcript: %d entries, the newest numbered %d; Stats.TranscriptDropped = %d; want 256 kept and the %d before counted (at least %d)", len(tr), last, dropped, last+1-256, n-256)
		}
		// The newest are kept: the oldest one WaitNotification gives is
		// number n-1024.
		m, err := s.WaitNotification(ctx, wire.MethodProgress)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"progress":%d,`, n-1024); !strings.Contains(string(m.Params), want) {
			t.Errorf("oldest kept notification %.100s, want %s", m.Params, want)
		}
		checkAccounting(t, st)
	})
}

// TestManyCallsInFlight: 1,000 concurrent calls on one session with
// defaults all succeed.
func TestManyCallsInFlight(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child))
		const n = 1000
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := s.Call(ctx, wire.MethodToolsCall, call("echo", map[string]any{"text": fmt.Sprint(i)}))
				if err == nil && resultText(t, r) != fmt.Sprint(i) {
					err = fmt.Errorf("call %d answered %q", i, resultText(t, r))
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		failed := 0
		for err := range errs {
			if err != nil {
				if failed == 0 {
					t.Error(err)
				}
				failed++
			}
		}
		if failed > 0 {
			t.Errorf("%d of %d calls failed", failed, n)
		}
	})
}

// TestLargeNotificationsBoundedHeap: 300 notifications of 2 MiB leave the
// host's heap within its budgets: each is kept as its head. Under the race
// detector they are 256 KiB each (75 MiB in all, still far over the
// budget), and CI also runs the full size without it.
func TestLargeNotificationsBoundedHeap(t *testing.T) {
	ctx := t.Context()
	s := mcptest.StartServer(t, target(t, true), mcptest.WithMaxFrame(4<<20), mcptest.WithTimeout(time.Minute))
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	n, size := int64(300), int64(2<<20)
	if raceEnabled {
		size = 256 << 10
	}
	if _, err := s.Call(ctx, wire.MethodToolsCall, map[string]any{"name": "notes", "arguments": map[string]any{"n": n, "size": size}, "_meta": map[string]any{"progressToken": 1}}); err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	st := s.Stats()
	if st.Notifications != n || st.NotificationsCut != n {
		t.Errorf("Stats: Notifications %d, NotificationsCut %d; want %d, %d", st.Notifications, st.NotificationsCut, n, n)
	}
	// Kept: 256 heads of 64 KiB (the 16 MiB budget); the framer's buffer:
	// up to the 4 MiB limit; allow 8 MiB for everything else.
	const budget = 16<<20 + 4<<20 + 8<<20
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > budget {
		t.Errorf("heap grew by %d MiB after %d MiB of notifications, want at most %d MiB", grew>>20, n*size>>20, budget>>20)
	}
	m, err := s.WaitNotification(ctx, wire.MethodProgress)
	if err != nil {
		t.Fatal(err)
	}
	if m.Params != nil || len(m.Head) != 64<<10 || m.Size < size {
		t.Errorf("a 2 MiB notification kept as Params %d bytes, Head %d bytes, Size %d; want no params, a 64 KiB head and its size", len(m.Params), len(m.Head), m.Size)
	}
}

// TestBlockedHandlerAndServerRequestFlood: a WithServerRequests handler that
// does not return holds up neither the reader nor other calls; a flood of
// server requests behind it is dropped beyond the bound, counted.
func TestBlockedHandlerAndServerRequestFlood(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		entered := make(chan struct{}, 1)
		h := func(ctx context.Context, req *wire.Message) (any, error) {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-ctx.Done() // never answers while the session lives
			return nil, ctx.Err()
		}
		s := mcptest.StartServer(t, target(t, child), mcptest.WithServerRequests(h), mcptest.WithGrace(500*time.Millisecond))
		if _, err := s.Call(ctx, wire.MethodToolsCall, call("srq", map[string]any{"n": 1})); err != nil {
			t.Fatal(err)
		}
		<-entered
		const n = 200
		if _, err := s.Call(ctx, wire.MethodToolsCall, call("srq", map[string]any{"n": n})); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if _, err := s.Call(ctx, wire.MethodToolsCall, call("echo", map[string]any{"text": fmt.Sprint(i)})); err != nil {
				t.Fatalf("call %d with the handler blocked: %v", i, err)
			}
		}
		st := s.Stats()
		if st.ServerRequests != n+1 || st.ServerRequestsDropped != n-64 {
			t.Errorf("Stats: ServerRequests %d, ServerRequestsDropped %d; want %d and %d (64 wait for the handler)", st.ServerRequests, st.ServerRequestsDropped, n+1, n-64)
		}
		if d := s.Diagnose(); !strings.Contains(d, "server requests: 64 (") || !strings.Contains(d, fmt.Sprintf("%d dropped unanswered", n-64)) {
			t.Errorf("Diagnose does not name the waiting and dropped server requests:\n%s", d)
		}
	})
}

// TestFloodWhileStalled: a notification flood written while host reads are
// stalled blocks the server, and once reads resume every notification
// arrives and other requests work.
func TestFloodWhileStalled(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child), untilDeadline(t))
		s.StallReads()
		const n = 20_000
		p := s.Send(wire.MethodToolsCall, call("notes", map[string]any{"n": n, "size": 200}))
		if err := s.WaitWriterBlocked(ctx); err != nil {
			t.Fatal(err)
		}
		s.ResumeReads()
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Notifications != n {
			t.Errorf("Stats.Notifications = %d, want %d", st.Notifications, n)
		}
	})
}

// TestOverflowEndSession: a test that wants "this server does not flood me"
// gets a session that ends, saying which bound was reached.
func TestOverflowEndSession(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := mcptest.StartServer(t, target(t, false), mcptest.Limits{Notifications: 10, OverflowEndSession: true})
	p := s.Send(wire.MethodToolsCall, call("burst", map[string]any{"n": 100}))
	r, err := p.Wait(ctx)
	if err != nil || r.Error != nil {
		t.Fatalf("the response read before the flood: %v %v; want it delivered", r, err)
	}
	if err := s.Ping(ctx); !errors.Is(err, mcptest.ErrClosed) || !strings.Contains(err.Error(), "notifications exceeded what the host keeps (Limits.OverflowEndSession: 10") {
		t.Fatalf("Ping after the flood = %v, want an error wrapping ErrClosed that names the bound", err)
	}
	// Close reads stdout to its end.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Notifications != 100 {
		t.Errorf("Stats.Notifications = %d, want all 100 counted after the end", st.Notifications)
	}
}

// TestNotificationByteBudget: kept notifications stay within the byte
// budget, oldest first out.
func TestNotificationByteBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := mcptest.StartServer(t, target(t, false), mcptest.Limits{NotificationBytes: 10_000})
	if _, err := s.Call(ctx, wire.MethodToolsCall, call("notes", map[string]any{"n": 100, "size": 1000})); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	// About 1,000 bytes each: 9 fit in 10,000 bytes.
	if st.Notifications != 100 || st.NotificationsDropped != 91 {
		t.Errorf("Stats: Notifications %d, NotificationsDropped %d; want 100 and 91", st.Notifications, st.NotificationsDropped)
	}
}

// TestFloodLineBoundaries: in a flood of frames of one length, bytes as
// many as a frame that hold a newline where the frames before had none are
// two frames, not one: each is counted and kept.
func TestFloodLineBoundaries(t *testing.T) {
	t.Parallel()
	frame := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1%02d,"total":200,"message":"step 1%02d"}}`, i, i)
	}
	n := len(frame(0))
	short := `{"jsonrpc":"2.0","method":"x"}`
	padded := `{"jsonrpc":"2.0","method":"y","params":{"pad":""}}`
	pad := strings.Repeat("p", n-len(short)-1-len(padded))
	padded = strings.Replace(padded, `""`, `"`+pad+`"`, 1)
	var b strings.Builder
	for i := range 30 {
		b.WriteString(frame(i) + "\n")
	}
	b.WriteString(short + "\n" + padded + "\n") // as many bytes as a frame before the second newline
	for i := 30; i < 60; i++ {
		b.WriteString(frame(i) + "\n")
	}
	s := mcptest.StartServer(t, mcptest.InProcess(rawServer([]byte(b.String()))), mcptest.WithoutHandshake())
	if _, err := s.Call(t.Context(), "flood", nil); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Notifications != 62 || st.JunkLines != 0 || st.ParseErrors != 0 {
		t.Errorf("Stats: %d notifications, %d junk lines, %d parse errors; want 62, 0, 0", st.Notifications, st.JunkLines, st.ParseErrors)
	}
	checkAccounting(t, st)
	// The response came after every notification on the same stream: they
	// are all kept by now, so none is waited for (a frame taken wrongly
	// fails here at once, not at the test's deadline).
	var x, y *mcptest.Notification
	for _, m := range s.TakeNotifications() {
		switch m.Method {
		case "x":
			x = &m
		case "y":
			y = &m
		}
	}
	if x == nil {
		t.Error("notification x was not kept")
	}
	if y == nil {
		t.Error("notification y was not kept")
	} else if want := `{"pad":"` + pad + `"}`; string(y.Params) != want || y.Size != int64(len(padded)) {
		t.Errorf("notification y: params %s (%d bytes), want %s (%d)", y.Params, y.Size, want, len(padded))
	}
}
