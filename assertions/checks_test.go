package assertions_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestCheckCancelStopsWork: a server that honours the cancel passes; one
// that ignores it fails, even when it floods progress (every notification
// counts, however many arrive).
func TestCheckCancelStopsWork(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name       string
		opts       []fakeserver.Option
		intervalMs int
		wantErr    string
	}{
		{"honours cancel", nil, 1, ""},
		{"ignores cancel, slow progress", []fakeserver.Option{fakeserver.Faults{IgnoreCancel: true}}, 20, "progress notifications for id="},
		{"ignores cancel, progress flood", []fakeserver.Option{fakeserver.Faults{IgnoreCancel: true}}, 1, "progress notifications for id="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
				return fakeserver.New(tt.opts...).Serve(ctx, in, out, errw)
			}))
			p := s.Send(wire.MethodToolsCall, map[string]any{
				"name": "slow", "arguments": map[string]any{"steps": 1000000, "intervalMs": tt.intervalMs},
				"_meta": map[string]any{"progressToken": "tok-1"},
			})
			if _, err := s.WaitNotification(t.Context(), wire.MethodProgress); err != nil {
				t.Fatal(err)
			}
			err := assertions.CheckCancelStopsWork(t.Context(), s, p, assertions.ServerConfig{CancelGrace: 200 * time.Millisecond}).Err()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckCancelStopsWork = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckCancelStopsWork = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// fake starts the good fake in-process with 4 KiB pipes.
func fake(t *testing.T, opts ...fakeserver.Option) *mcptest.Session {
	t.Helper()
	return mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
		return fakeserver.New(opts...).Serve(ctx, in, out, errw)
	}), mcptest.WithPipeCapacity(4096))
}

func bigCall(n int) map[string]any {
	return map[string]any{"name": "big", "arguments": map[string]any{"bytes": n}}
}

func TestCheckNoDeadlock(t *testing.T) {
	t.Run("scenario finishes", func(t *testing.T) {
		s := fake(t)
		err := assertions.CheckNoDeadlock(t.Context(), s, 10*time.Second, func(ctx context.Context) error {
			_, err := s.Call(ctx, wire.MethodToolsCall, bigCall(1<<20))
			return err
		}).Err()
		if err != nil {
			t.Errorf("CheckNoDeadlock = %v, want nil", err)
		}
	})
	t.Run("scenario deadlocks", func(t *testing.T) {
		s := fake(t)
		s.StallReads()
		begin := time.Now()
		res := assertions.CheckNoDeadlock(t.Context(), s, 300*time.Millisecond, func(ctx context.Context) error {
			p := s.Send(wire.MethodToolsCall, bigCall(1<<20))
			<-p.Done() // ignores ctx: only killing the server ends this
			_, err := p.Wait(ctx)
			return err
		})
		if err := res.Err(); err == nil || !strings.Contains(err.Error(), "did not finish within 300ms") || !strings.Contains(res.Details, "diagnosis") {
			t.Fatalf("CheckNoDeadlock = %v (details %q), want a deadlock report with a diagnosis", err, res.Details)
		}
		if s.Stats().Exit.How == "" {
			t.Error("the server is still alive after CheckNoDeadlock reported a deadlock")
		}
		if d := time.Since(begin); d > 20*time.Second {
			t.Errorf("CheckNoDeadlock took %v", d)
		}
	})
}

func TestCheckWriterBlockedAndSecondRequest(t *testing.T) {
	s := fake(t)
	s.StallReads()
	big := s.Send(wire.MethodToolsCall, bigCall(1<<20))
	if err := assertions.CheckWriterBlocked(t.Context(), s, 10*time.Second).Err(); err != nil {
		t.Fatalf("CheckWriterBlocked with a 1 MiB response and 4 KiB pipes: %v", err)
	}
	big.Cancel("test")
	s.ResumeReads()
	if err := assertions.CheckSecondRequestCompletes(t.Context(), s, 10*time.Second).Err(); err != nil {
		t.Errorf("CheckSecondRequestCompletes after resuming: %v", err)
	}
	if err := assertions.CheckStdoutClean(t.Context(), s, assertions.ServerConfig{}).Err(); err != nil {
		t.Errorf("CheckStdoutClean on the good fake: %v", err)
	}
}

func TestCheckWriterBlockedFailsWithoutOutput(t *testing.T) {
	s := fake(t)
	err := assertions.CheckWriterBlocked(t.Context(), s, 300*time.Millisecond).Err()
	if err == nil || !strings.Contains(err.Error(), "did not block writing stdout") {
		t.Errorf("CheckWriterBlocked with nothing being written = %v, want an error saying the server did not block", err)
	}
}

func TestCheckSecondRequestFailsOnNaiveLoop(t *testing.T) {
	s := fake(t, fakeserver.Faults{NaiveLoop: true})
	s.StallReads()
	s.Send(wire.MethodToolsCall, bigCall(1<<20))
	if err := s.WaitWriterBlocked(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Reads stay stalled: the naive loop is stuck writing, so nothing answers.
	err := assertions.CheckSecondRequestCompletes(t.Context(), s, 300*time.Millisecond).Err()
	if err == nil || !strings.Contains(err.Error(), "got no answer within 300ms") {
		t.Errorf("CheckSecondRequestCompletes against a blocked naive loop = %v, want no answer", err)
	}
}

func TestCheckStdoutCleanSeesBanner(t *testing.T) {
	s := fake(t, fakeserver.Faults{Banner: "starting up..."})
	err := assertions.CheckStdoutClean(t.Context(), s, assertions.ServerConfig{}).Err()
	if err == nil || !strings.Contains(err.Error(), `"starting up..."`) {
		t.Errorf("CheckStdoutClean with a banner = %v, want an error quoting the banner", err)
	}
}
