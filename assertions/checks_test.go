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
)

// TestCheckCancelStopsWork: a server that honours the cancel passes; one
// that ignores it fails, even when it floods progress (every notification
// counts, however many arrive).
func TestCheckCancelStopsWork(t *testing.T) {
	for _, tt := range []struct {
		name       string
		opts       []fakeserver.Option
		intervalMs int
		wantErr    string
	}{
		{"honours cancel", nil, 1, ""},
		{"ignores cancel, slow progress", []fakeserver.Option{fakeserver.WithIgnoreCancel()}, 20, "progress notifications for token"},
		{"ignores cancel, progress flood", []fakeserver.Option{fakeserver.WithIgnoreCancel()}, 1, "progress notifications for token"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
				return fakeserver.New(tt.opts...).Serve(ctx, in, out, errw)
			}))
			p := s.Send(mcptest.MethodToolsCall, map[string]any{
				"name": "slow", "arguments": map[string]any{"steps": 1000000, "intervalMs": tt.intervalMs},
				"_meta": map[string]any{"progressToken": "tok-1"},
			})
			if _, err := s.WaitNotification(t.Context(), mcptest.MethodProgress); err != nil {
				t.Fatal(err)
			}
			err := assertions.CheckCancelStopsWork(t.Context(), s, p, 200*time.Millisecond)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckCancelStopsWork = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckCancelStopsWork = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}
