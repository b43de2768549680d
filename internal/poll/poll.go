// Package poll is the one way the library's tests wait for a state that
// has no event to wait on: a pipe's fill level, a counter another process
// exposes only as state. It looks at the state at a fixed interval, and its
// only bound is the test's deadline (internal/bound). Where an event exists
// (a channel, a Wait method, a byte count reached), wait on that instead.
package poll

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// Interval is how soon Until looks at the state again the first time;
// each later look waits twice as long as the one before, up to
// MaxInterval, so that a state that is soon true is seen soon and a look
// that costs (a child process run, a file read) is not repeated in a busy
// loop.
const (
	Interval    = time.Millisecond
	MaxInterval = 64 * time.Millisecond
)

// Until calls cond, first at once, then after Interval, doubling up to
// MaxInterval, until it returns true or ctx ends; then it returns an error
// naming what was awaited, how long, and wrapping ctx's error.
func Until(ctx context.Context, what string, cond func() bool) error {
	start := time.Now()
	every := Interval
	t := time.NewTimer(every)
	defer t.Stop()
	for !cond() {
		select {
		case <-t.C:
			every = min(2*every, MaxInterval)
			t.Reset(every)
		case <-ctx.Done():
			if cond() {
				return nil
			}
			return fmt.Errorf("poll: %s: not so after %v: %w", what, time.Since(start).Round(time.Millisecond), ctx.Err())
		}
	}
	return nil
}

// Wait is Until for a test: bounded by at most max and never past the
// test's deadline less the margin (bound.For), it calls t.Fatalf with the
// error and, if diag is not nil, diag's evidence when cond never holds.
func Wait(t testing.TB, max time.Duration, what string, cond func() bool, diag func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), bound.For(t, max))
	defer cancel()
	err := Until(ctx, what, cond)
	switch {
	case err != nil && diag != nil:
		t.Fatalf("%v\n%s", err, diag())
	case err != nil:
		t.Fatalf("%v", err)
	}
}
