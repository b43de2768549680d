package proxy

import "github.com/mcpstdio/mcpstdio/pipes"

// What the external tests (package proxy_test, which imports mcptest, which
// imports proxy through replay) need from the inside.

// Indexes of Status.Streams.
const (
	DIn  = dIn
	DOut = dOut
	DErr = dErr
)

// ServerStdout is the pipe the server writes its stdout to.
func (p *Proxy) ServerStdout() *pipes.Pipe { return p.pipes[dOut] }

// SetForwarding makes the proxies started from now on forward by "copy"
// (read and write) or by "splice" (wherever both ends are pipes, every
// chunk), or by the rule ("auto"); it returns a function that restores
// the mode before.
func SetForwarding(mode string) (restore func()) {
	m := map[string]int32{"auto": fwdAuto, "copy": fwdCopy, "splice": fwdSplice}[mode]
	old := forwarding.Swap(m)
	return func() { forwarding.Store(old) }
}

// Spliced returns how many bytes of direction d went by splice.
func (p *Proxy) Spliced(d int) int64 { return p.fw[d].sp.splicedBytes() }
