package proxycmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// stuckRecord is a record on a hung file system: its Write does not
// return, and its Close waits for it, as state.LogFile's waits for the
// lock the Write holds.
type stuckRecord struct{ release chan struct{} }

func (s stuckRecord) Write(p []byte) (int, error) { <-s.release; return len(p), nil }
func (s stuckRecord) Close() error                { <-s.release; return nil }
func (s stuckRecord) Problem() string             { return "" }

// TestCloseStuckRecord: the proxy's end does not wait for a record that
// cannot be closed: Wait goes on without a record whose write does not
// return, and so must the command, or the proxy never exits. Its status
// file is removed all the same.
func TestCloseStuckRecord(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	st := &proxyState{log: stuckRecord{release}, statusPath: filepath.Join(t.TempDir(), "p"+state.StatusSuffix)}
	if err := os.WriteFile(st.statusPath, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st.closeWithin(100 * time.Millisecond) {
		t.Fatal("closeWithin returned true: the record's Close returned, though it cannot")
	}
	if _, err := os.Stat(st.statusPath); !os.IsNotExist(err) {
		t.Errorf("the status file is still there (%v): a proxy that ended leaves none", err)
	}
}
