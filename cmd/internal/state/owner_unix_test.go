//go:build unix

package state_test

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// TestStatusFIFO: a FIFO named as a status file is refused at once, not
// waited on for a writer that never comes.
func TestStatusFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x"+state.StatusSuffix)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan state.StatusEntry, 1)
	go func() { done <- state.ReadStatus(path, time.Now()) }()
	select {
	case e := <-done:
		if e.Err == nil || !strings.Contains(e.Err.Error(), "not a regular file") {
			t.Errorf("ReadStatus of a FIFO: %v, want a refusal", e.Err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ReadStatus of a FIFO has not returned after a minute")
	}
}
