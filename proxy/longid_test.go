package proxy_test

import (
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestLongIDsComparedWhole: ids longer than 128 bytes that
// share their first 128 bytes are told apart through the real proxy: two
// pings answered (parsed), a call whose response is over the parse limit
// (scanned only), and a cancel of a long id that is pending. No response
// is to an unknown id, none of the answered calls is left pending, and
// the cancel finds its request.
func TestLongIDsComparedWhole(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{ParseLimit: 2048})
	t.Cleanup(func() { r.stdin.Close() }) // before the rig's: the fake ends on EOF, even if the test fails early
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	p := `"` + strings.Repeat("p", 140)
	ids := []string{p + `-a"`, p + `-b"`, p + `-c"`, p + `-d"`}
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":` + ids[0] + `,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":` + ids[1] + `,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":` + ids[2] + `,"method":"tools/call","params":{"name":"big","arguments":{"bytes":8192}}}`,
		`{"jsonrpc":"2.0","id":` + ids[3] + `,"method":"tools/call","params":{"name":"slow","arguments":{"steps":100000,"intervalMs":10}}}`,
	} {
		r.stdin.Write([]byte(l + "\n"))
	}
	isResponse := func(e record.Event) bool {
		return e.Ev == record.EvFrame && e.Dir == record.DirOut && e.Kind == record.KindResponse
	}
	seen := map[int64]bool{}
	r.rec.wait(t, "the third response", func(e record.Event) bool {
		if isResponse(e) {
			seen[e.Seq] = true
		}
		return len(seen) >= 3
	})
	if big := r.rec.find(func(e record.Event) bool { return isResponse(e) && e.N > 8192 }); len(big) != 1 || !big[0].Scanned {
		t.Errorf("the response to the big call: %+v; the test means it to be over the parse limit, scanned only", big)
	}
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + ids[3] + `,"reason":"test"}}` + "\n"))
	c := r.rec.wait(t, "the cancel", isEv(record.EvCancel))
	if c.State == "unknown" || c.Method != "tools/call" {
		t.Errorf("the cancel of a long id: state %q, method %q; want its pending tools/call found", c.State, c.Method)
	}
	r.stdin.Close()
	res := r.wait()
	out()
	if m := res.Status.Metrics; m.UnknownResponses != 0 {
		t.Errorf("%d responses to unknown ids (first %s), want none", m.UnknownResponses, m.FirstUnknown)
	}
	for _, pd := range res.Status.Pending {
		for _, id := range ids[:3] {
			if string(pd.ID) == string(wire.LongID([]byte(id))) {
				t.Errorf("answered call %s left pending (%s)", pd.ID, pd.State)
			}
		}
	}
}
