package poll_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

// TestUntilNamesWhatAndWraps: an awaited state that never comes is named,
// and the context's error is wrapped.
func TestUntilNamesWhatAndWraps(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	looks := 0
	err := poll.Until(ctx, "the pipe full", func() bool { looks++; return false })
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the pipe full") {
		t.Errorf("Until = %v, want an error naming the state and wrapping context.Canceled", err)
	}
	if looks < 2 {
		t.Errorf("cond looked at %d times, want at least 2 (once at once, once when ctx ended)", looks)
	}
}

// TestUntilLooksAtOnce: a state that already holds returns nil without a tick.
func TestUntilLooksAtOnce(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := poll.Until(ctx, "true", func() bool { return true }); err != nil {
		t.Errorf("Until = %v, want nil", err)
	}
}

// TestWaitReportsWithDiag: Wait fails the test with the diagnosis.
func TestWaitReportsWithDiag(t *testing.T) {
	f := &fakeTB{TB: t}
	poll.Wait(f, 0, "never", func() bool { return false }, func() string { return "evidence: 3 bytes" })
	if !strings.Contains(f.msg, "never") || !strings.Contains(f.msg, "evidence: 3 bytes") {
		t.Errorf("Wait reported %q, want the state and the evidence", f.msg)
	}
}

type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }
