package proxy_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestPendingResponding: a response the proxy is reading, its newline not
// yet come (a 4 MiB result to a host that does not read), is "responding"
// in the status and in the cancel event, with how much of it was read and
// delivered; it was "waiting", as if nothing had come.
func TestPendingResponding(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{})
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"bytes":4194304}}}` + "\n"))
	var st proxy.Status
	// A write in progress is not yet a blocked one (on a loaded machine
	// the status can catch the first 16 KiB on their way): the host's pipe
	// holds 64 KiB, so the proxy has read more than that once it blocks.
	poll.Wait(t, bound(t), "the proxy's write of the response blocked past the host's 64 KiB pipe, the observer seeing the response", func() bool {
		st = r.p.Status()
		return st.Streams[proxy.DOut].BlockedBytes > 0 && len(st.Pending) == 1 && st.Streams[proxy.DOut].Current != nil && st.Pending[0].ResponseBytes >= 64<<10
	}, nil)
	p, cur := st.Pending[0], st.Streams[proxy.DOut].Current
	if p.State != "responding" || cur == nil || p.ResponseBytes != cur.Bytes || p.ResponseDelivered > p.ResponseBytes {
		t.Errorf("pending %+v with %+v in progress on stdout: want responding, with its bytes read so far and delivered of those", p, cur)
	}
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"))
	ce := r.rec.wait(t, "cancel", isEv(record.EvCancel))
	if ce.State != "responding" || ce.N < p.ResponseBytes || ce.Bytes > ce.N {
		t.Errorf("cancel event: state %q, response %d bytes read, %d delivered; want responding, at least %d read", ce.State, ce.N, ce.Bytes, p.ResponseBytes)
	}
	drain(t, r.stdout)
	r.stdin.Close()
	r.wait()
}
