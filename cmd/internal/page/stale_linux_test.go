package page

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestLiveStaleButRunning: a stale status file whose proxy still holds
// its record open (a proxy stopped with SIGSTOP stops rewriting its status
// file) is not called gone: the page says the proxy still runs. Linux: the
// proxy's descriptors are looked at in /proc.
func TestLiveStaleButRunning(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, PID: os.Getpid(), Argv: []string{"srv"}}})
	json.NewEncoder(&b).Encode(record.Event{Seq: 1, T: 2_000_000, Ev: record.EvSpawn, PID: 1})
	if err := os.WriteFile(log, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(log) // this process is the proxy, and holds its record
	if err != nil {
		t.Fatal(err)
	}
	srv := &Server{Token: "t", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Stale: true, Start: now.Add(-time.Hour), Log: log, Status: map[string]any{}}}, nil
	}}
	if e := srv.Snapshot(time.Now()).Proxies[0].Ending; !strings.Contains(e, ") is still running (it holds the record open)") {
		t.Errorf("ending %q, want the proxy still running", e)
	}
	f.Close()
	if e := srv.Snapshot(time.Now()).Proxies[0].Ending; !strings.Contains(e, ") is gone:") && !strings.Contains(e, "the proxy was killed, or is still running") {
		t.Errorf("after the proxy let go of its record: ending %q, want it no longer running", e)
	}
}
