package mcptest_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestWaitStopped: an idle child server is seen stopped within about a
// second, with the evidence; an in-process one cannot be seen, and says so
// at once.
func TestWaitStopped(t *testing.T) {
	t.Parallel()
	t.Run("child", func(t *testing.T) {
		t.Parallel()
		if runtime.GOOS != "linux" {
			t.Skip("threads are read from /proc: Linux only")
		}
		s := mcptest.StartServer(t, target(t, true))
		begin := time.Now()
		a, err := s.WaitStopped(t.Context())
		if err != nil || !a.Known || !a.Stopped || a.Demand < 0 || a.StdinTaken != 0 || a.StdoutWritten != 0 {
			t.Fatalf("WaitStopped = %+v, %v; want stopped, with nothing taken or written", a, err)
		}
		if !strings.HasPrefix(a.String(), "stopped: ") || !strings.Contains(a.Threads, "asleep") {
			t.Errorf("Activity = %q (threads %q), want it stopped with every thread asleep", a, a.Threads)
		}
		if took := time.Since(begin); took > 5*time.Second {
			t.Errorf("WaitStopped took %v", took)
		}
	})
	t.Run("in-process", func(t *testing.T) {
		t.Parallel()
		s := mcptest.StartServer(t, target(t, false))
		a, err := s.WaitStopped(t.Context())
		if err == nil || a.Known || a.Stopped || !strings.Contains(err.Error(), "unverified") {
			t.Errorf("WaitStopped = %+v, %v; want an error saying it is unverified", a, err)
		}
	})
}

// TestWaitWriterBlockedStoppedShort: a server whose output stays short of
// the pipe and that then stops is reported at once, not after the bound.
func TestWaitWriterBlockedStoppedShort(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("threads are read from /proc: Linux only")
	}
	s := mcptest.StartServer(t, target(t, true), mcptest.WithPipeCapacity(16384))
	s.StallReads()
	p := s.Send(wire.MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", 500)}})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	err := s.WaitWriterBlocked(ctx)
	var nb *mcptest.NotBlockedError
	if !errors.As(err, &nb) || !nb.Activity.Stopped || nb.Waited >= 10*time.Second || nb.Buffered <= 0 {
		t.Fatalf("WaitWriterBlocked = %v; want a *NotBlockedError at once, the server stopped with its answer in the pipe", err)
	}
	s.ResumeReads()
	if _, err := p.Wait(t.Context()); err != nil {
		t.Errorf("the echo after resuming: %v", err)
	}
}
