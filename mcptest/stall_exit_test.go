package mcptest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TestWaitWriterBlockedServerEnded: a server that ends while the host's
// reads are stalled will never block writing; WaitWriterBlocked says it
// ended, with how, instead of waiting out its bound.
func TestWaitWriterBlockedServerEnded(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, target(t, true))
	s.StallReads()
	// The server writes the head of a response and exits (status 3).
	s.Send("tools/call", map[string]any{"name": "exit-mid-frame"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := s.WaitWriterBlocked(ctx)
	var nb *mcptest.NotBlockedError
	if !errors.As(err, &nb) || !strings.Contains(err.Error(), "it ended") {
		t.Fatalf("WaitWriterBlocked on a server that ended: %v; want a NotBlockedError saying it ended", err)
	}
	t.Log(err)
}
