package cancelrule_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cancelrule"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

// slowCall sends the fake's slow tool with a progress token.
func slowCall(s *mcptest.Session) *mcptest.Pending {
	return s.Send("tools/call", map[string]any{
		"name":      fakeserver.ToolSlow,
		"arguments": map[string]any{"steps": 1000, "intervalMs": 20},
		"_meta":     map[string]any{"progressToken": "t"},
	})
}

// TestWentOn: a server that ignores the cancel keeps sending progress, and
// the rule says the work went on, naming the progress that came.
func TestWentOn(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, mcptest.InProcess(fakeserver.New(fakeserver.Faults{IgnoreCancel: true}).Serve))
	ctx := t.Context()
	before := cancelrule.Measure(ctx, s, 0)
	p := slowCall(s)
	g := cancelrule.Observe(ctx, s, p, before, 2*time.Second)
	seen, err := cancelrule.Watch(ctx, s, p, before, cancelrule.Config{})
	if err != nil {
		t.Fatal(err)
	}
	o := seen.Judge(g, 0)
	if o.Verdict != cancelrule.WentOn || !strings.Contains(o.Evidence, "progress notifications for id=") {
		t.Fatalf("Judge = %v (%s), want went on with the progress as evidence", o.Verdict, o.Evidence)
	}
}

// TestSentByCaller: a cancel the caller wrote itself (Config.Sent) is
// watched from when it was written, and nothing more is sent.
func TestSentByCaller(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, mcptest.InProcess(fakeserver.New().Serve))
	ctx := t.Context()
	before := cancelrule.Measure(ctx, s, 0)
	p := slowCall(s)
	g := cancelrule.Observe(ctx, s, p, before, 2*time.Second)
	sent := time.Now()
	if err := s.Notify("notifications/cancelled", map[string]any{"requestId": p.ID(), "reason": "by hand"}); err != nil {
		t.Fatal(err)
	}
	seen, err := cancelrule.Watch(ctx, s, p, before, cancelrule.Config{Sent: sent})
	if err != nil {
		t.Fatal(err)
	}
	if o := seen.Judge(g, 0); o.Verdict != cancelrule.Stopped {
		t.Fatalf("Judge = %v (%s), want stopped", o.Verdict, o.Evidence)
	}
	if n := s.Stats().CancelsSent; n != 0 {
		t.Errorf("Stats().CancelsSent = %d, want 0: Watch must not cancel again", n)
	}
}

// TestWatchEndsWithContext: Watch returns ctx's error when ctx ends during
// the grace, and leaves no goroutine (goleak checks at the end).
func TestWatchEndsWithContext(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, mcptest.InProcess(fakeserver.New().Serve))
	ctx, cancel := context.WithCancel(t.Context())
	p := slowCall(s)
	cancel()
	if _, err := cancelrule.Watch(ctx, s, p, cancelrule.Measure(ctx, s, 0), cancelrule.Config{Grace: time.Minute}); err != context.Canceled {
		t.Fatalf("Watch = %v, want context.Canceled", err)
	}
}
