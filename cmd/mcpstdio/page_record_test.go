package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// TestLivePageRecordOutsideStateDir: a proxy started with -log FILE
// outside the state directory (as docs/replay.md has users do) records;
// the live page does not read that record, and says so and why, instead of
// claiming the proxy records nothing and that the record has no requests.
func TestLivePageRecordOutsideStateDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "elsewhere.ndjson")
	r := startProxy(t, []string{"MCPSTDIO_STATE_DIR=" + dir}, "proxy", "-dir", dir, "-log", log, "--", binary, "fake")
	r.call(t, ping)
	url := livePage(t, dir)
	base, token, _ := strings.Cut(url, "?token=")
	var live page.Live
	var body string
	poll.Wait(t, cmdtest.Bound(t), "status.json listing the proxy", func() bool {
		_, body = fetch(t, base+"status.json?token="+token)
		return json.Unmarshal([]byte(body), &live) == nil && len(live.Proxies) == 1
	}, func() string { return body })
	p := live.Proxies[0]
	if strings.Contains(p.Record, "-no-log") || !strings.Contains(p.Record, log) || !strings.Contains(p.Record, "is not read") || p.HasRecord {
		t.Errorf("record %q (has_record %v): want it named as not read, with why", p.Record, p.HasRecord)
	}
	r.stdin.Close()
	r.wait(t)
}
