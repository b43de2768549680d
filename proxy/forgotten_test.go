package proxy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestForgottenCounted: a host floods more requests than the pending table
// holds to a server that never answers, cancelling every fourth. The
// verdicts count what the table forgot: the server's end leaves at least
// the tracked requests unanswered and as many more as were forgotten
// unanswered (75 in all, not the 12 still in the table), and the lost
// detail says the table forgot 84 requests.
func TestForgottenCounted(t *testing.T) {
	t.Parallel()
	const n, table = 100, 16
	r := startRig(t, helperCmd(t, "exit", "0"), proxy.Config{MaxPending: table})
	drain(t, r.stdout)
	drain(t, r.stderr)
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search"}}`+"\n", i)
		if i%4 == 0 {
			fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`+"\n", i-1)
		}
	}
	go func() {
		r.stdin.WriteString(b.String())
		r.stdin.Close()
	}()
	res := r.wait()
	if res.Status.Metrics.Forgotten != n-table {
		t.Errorf("Metrics.Forgotten = %d, want %d", res.Status.Metrics.Forgotten, n-table)
	}
	// Tracked at the end: ids 85-100, of which 87, 91, 95 and 99 were
	// cancelled. Forgotten: ids 1-84, of which 21 were cancelled.
	want := map[string][]string{
		record.VerdictExited:  {"at least 12 requests unanswered", "63 more requests that were unanswered when the proxy's bounded pending table (16 entries) forgot them"},
		record.VerdictDropped: {"pending table (16 entries) was full and forgot the 84 oldest requests (63 of them unanswered and not cancelled then)"},
	}
	for _, v := range res.Verdicts {
		for _, w := range want[v.Kind] {
			if !strings.Contains(v.Text, w) {
				t.Errorf("verdict %s = %q, want it to say %q", v.Kind, v.Text, w)
			}
		}
		delete(want, v.Kind)
	}
	for k := range want {
		t.Errorf("no %s verdict in %+v", k, res.Verdicts)
	}
}
