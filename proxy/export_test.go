package proxy

import "github.com/mcpstdio/mcpstdio/pipes"

// What the external tests (package proxy_test, which imports mcptest, which
// imports proxy through replay) need from the inside.

// Indexes of Status.Streams.
const (
	DIn  = dIn
	DOut = dOut
)

// ServerStdout is the pipe the server writes its stdout to.
func (p *Proxy) ServerStdout() *pipes.Pipe { return p.pipes[dOut] }
