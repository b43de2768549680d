package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestStatusCapped: a flood's status (5,000 pending requests, 3,000
// verdicts) is printed as the live page shows it: the oldest 50 and the
// latest 50 of each list and a line counting the others, not a line each.
func TestStatusCapped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	writeStatusFile(t, dir, "flood", 0, 0, now, now, func(st *state.Status) {
		for i := range 5000 {
			st.Pending = append(st.Pending, proxy.PendingStatus{Dir: "in", ID: []byte(strconv.Itoa(i)), Method: "tools/call", State: "waiting"})
		}
		for i := range 3000 {
			st.Verdicts = append(st.Verdicts, record.Verdict{Kind: record.VerdictUnanswered, Text: "unanswered v" + strconv.Itoa(i) + "."})
		}
	})
	r := mcpstdio(t, time.Minute, "status", "-all", "-dir", dir)
	if n := strings.Count(r.stdout, "\n  pending id "); n != 100 {
		t.Errorf("%d pending lines, want 100", n)
	}
	if n := strings.Count(r.stdout, "\n  verdict "); n != 100 {
		t.Errorf("%d verdict lines, want 100", n)
	}
	for _, s := range []string{"pending id 0 ", "pending id 49 ", "… 4900 more pending requests, not listed", "pending id 4950 ", "pending id 4999 ",
		"verdict unanswered v0.", "… 2900 more verdicts, not listed", "verdict unanswered v2999."} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("status does not say %q", s)
		}
	}
	if strings.Contains(r.stdout, "pending id 50 ") || strings.Contains(r.stdout, "v50.") {
		t.Errorf("status lists a request or verdict from the middle")
	}
	if t.Failed() {
		t.Logf("status (%d bytes):\n%.3000s", len(r.stdout), r.stdout)
	}
}
