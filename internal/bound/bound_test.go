package bound_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestMargin(t *testing.T) {
	now := time.Now()
	if got := bound.Margin(now.Add(100 * time.Second)); got.Sub(now) > 96*time.Second || got.Sub(now) < 94*time.Second {
		t.Errorf("Margin(100s from now) = %v from now, want 95s (at most 5s earlier)", got.Sub(now))
	}
	if got := bound.Margin(now.Add(10 * time.Second)); got.Sub(now) > 9100*time.Millisecond || got.Sub(now) < 8900*time.Millisecond {
		t.Errorf("Margin(10s from now) = %v from now, want 9s (a tenth earlier)", got.Sub(now))
	}
}

func TestContext(t *testing.T) {
	ctx, cancel, dl := bound.Context(context.Background(), t)
	defer cancel()
	td, ok := t.Deadline()
	if !ok {
		if !dl.IsZero() {
			t.Errorf("no test deadline, but Context gave %v", dl)
		}
		return
	}
	if got, _ := ctx.Deadline(); !got.Equal(dl) || !dl.Before(td) {
		t.Errorf("Context deadline %v (returned %v), want before the test's %v", got, dl, td)
	}
}

func TestWaitAndPass(t *testing.T) {
	ch := make(chan struct{})
	if bound.Wait(ch, time.Millisecond) {
		t.Error("Wait on an open channel reported it closed")
	}
	close(ch)
	if !bound.Wait(ch, time.Hour) {
		t.Error("Wait on a closed channel timed out")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := bound.Pass(ctx, time.Hour); err != context.Canceled {
		t.Errorf("Pass with a cancelled context = %v, want context.Canceled", err)
	}
	if err := bound.Pass(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Pass = %v", err)
	}
}
