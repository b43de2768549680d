// Package bound holds the library's few shared rules about time: how far
// before a test's deadline its own bounds end, how a wait on a channel is
// bounded, and how a window is let pass. One definition each, so that every
// package bounds the same way.
package bound

import (
	"context"
	"time"
)

// Margin returns the deadline the library's waits keep to under a test
// deadline: a tenth of the time left, at most 5s, earlier. That leaves room
// to report what is stuck and clean up before the test binary's own timeout
// panics.
func Margin(deadline time.Time) time.Time {
	return deadline.Add(-min(time.Until(deadline)/10, 5*time.Second))
}

// Deadliner is what has a deadline: a *testing.T, *testing.B or
// *testing.F.
type Deadliner interface {
	Deadline() (time.Time, bool)
}

// Context returns parent bounded by t's deadline less the Margin, and that
// deadline (zero if t has none).
func Context(parent context.Context, t any) (context.Context, context.CancelFunc, time.Time) {
	d, ok := t.(Deadliner)
	if !ok {
		ctx, cancel := context.WithCancel(parent)
		return ctx, cancel, time.Time{}
	}
	dl, ok := d.Deadline()
	if !ok {
		ctx, cancel := context.WithCancel(parent)
		return ctx, cancel, time.Time{}
	}
	dl = Margin(dl)
	ctx, cancel := context.WithDeadline(parent, dl)
	return ctx, cancel, dl
}

// Wait reports whether ch is closed within d.
func Wait(ch <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// Pass lets d pass unless ctx ends first, and returns ctx's error then. It
// is for windows that are the point (an observation window in which
// something must not happen, the pace of a producer), never for waiting on
// an event.
func Pass(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// For returns the bound of one wait in a test: at most max, and never past
// t's deadline less the Margin.
func For(t any, max time.Duration) time.Duration {
	if d, ok := t.(Deadliner); ok {
		if dl, ok := d.Deadline(); ok {
			return min(max, time.Until(Margin(dl)))
		}
	}
	return max
}
