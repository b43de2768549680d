package mcptest_test

import (
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestCloseStdout closes the host's end of stdout under a server blocked
// writing a response: the call in flight fails saying why, the server's
// write fails (EPIPE, or SIGPIPE for a child writing its fd 1), and it ends
// once stdin closes too.
func TestCloseStdout(t *testing.T) {
	t.Parallel()
	testkit.EachWay(t, func(t *testing.T, child bool) {
		ctx := t.Context()
		s := mcptest.StartServer(t, target(t, child), mcptest.WithPipeCapacity(16<<10))
		s.StallReads()
		big := s.Send(wire.MethodToolsCall, call("big", map[string]any{"size": 1 << 20}))
		if err := s.WaitWriterBlocked(ctx); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		if err := s.CloseStdout(); err != nil {
			t.Fatalf("CloseStdout = %v", err)
		}
		if d := time.Since(begin); d > 5*time.Second {
			t.Errorf("CloseStdout took %v", d)
		}
		if _, err := big.Wait(ctx); err == nil || !strings.Contains(err.Error(), "CloseStdout") {
			t.Errorf("the call in flight: Wait = %v, want an error that names CloseStdout", err)
		}
		if _, err := s.Call(ctx, wire.MethodPing, nil); err == nil || !strings.Contains(err.Error(), "CloseStdout") {
			t.Errorf("a later call = %v, want an error that names CloseStdout", err)
		}
		if err := s.CloseStdin(); err != nil {
			t.Fatal(err)
		}
		ex, err := s.WaitExit(ctx)
		if err != nil {
			t.Fatalf("WaitExit = %v", err)
		}
		switch {
		case !child && (ex.Err == nil || !errors.Is(ex.Err, syscall.EPIPE)):
			t.Errorf("in-process server ended %v, want its write to have failed with EPIPE", ex)
		case child && ex.Signal != "SIGPIPE" && ex.Code == 0:
			t.Errorf("child server ended %v, want SIGPIPE or a failed exit", ex)
		}
		t.Logf("the server ended: %v", ex)
		if err := s.Close(); err != nil {
			t.Errorf("Close after CloseStdout = %v", err)
		}
		if err := s.CloseStdout(); !errors.Is(err, mcptest.ErrClosed) {
			t.Errorf("CloseStdout after Close = %v, want ErrClosed", err)
		}
	})
}
