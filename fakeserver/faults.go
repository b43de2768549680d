package fakeserver

import (
	"bytes"
	"fmt"
)

// faultPlan is what the faults do around the nth message read from stdin.
type faultPlan struct {
	n           int
	prelude     [][]byte // lines written before the message's response
	rawNewline  bool     // a raw newline inside the response
	noNewline   bool     // the response without its newline, then exit
	closeStdout bool     // close stdout after the response
}

func (p faultPlan) empty() bool {
	return len(p.prelude) == 0 && !p.rawNewline && !p.noNewline && !p.closeStdout
}

// InvalidJSONLine is the line WithInvalidJSON writes: the start of a JSON
// object that never ends.
const InvalidJSONLine = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":`

// ServerRequestLine is the server-to-client request WithServerRequest writes.
const ServerRequestLine = `{"jsonrpc":"2.0","id":"fakeserver-1","method":"ping"}`

const (
	oversizedHead = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"fakeserver","data":"`
	oversizedTail = `"}}`
)

// OversizedFrame returns the frame WithOversizedFrame writes, without its
// newline: a notifications/message of exactly size bytes, or of its minimum
// size (len of the envelope, 103 bytes) if size is smaller.
func OversizedFrame(size int) []byte {
	pad := max(size-len(oversizedHead)-len(oversizedTail), 0)
	b := make([]byte, 0, len(oversizedHead)+pad+len(oversizedTail))
	b = append(b, oversizedHead...)
	b = append(b, bytes.Repeat([]byte("o"), pad)...)
	return append(b, oversizedTail...)
}

func (s *Server) planFor(n int) faultPlan {
	c := &s.cfg
	p := faultPlan{n: n}
	if c.stdoutLogAfter == n {
		p.prelude = append(p.prelude, []byte(c.stdoutLogLine+"\n"))
	}
	if c.invalidJSON == n {
		p.prelude = append(p.prelude, []byte(InvalidJSONLine+"\n"))
	}
	if c.oversizedAfter == n {
		p.prelude = append(p.prelude, append(OversizedFrame(c.oversizedSize), '\n'))
	}
	if c.serverRequest == n {
		p.prelude = append(p.prelude, []byte(ServerRequestLine+"\n"))
	}
	p.rawNewline = c.rawNewline == n
	p.noNewline = c.noFinalNewline == n
	p.closeStdout = c.closeStdout == n
	return p
}

// writePrelude writes the fault lines planned before a response; s.wmu must
// be held.
func (s *Server) writePrelude(p faultPlan) {
	for _, line := range p.prelude {
		if _, err := s.out.write(line); err != nil {
			s.logf("fault line after message %d: %v", p.n, err)
		}
	}
}

// afterFrame carries out the faults planned after a response (or after a
// message that got none); s.wmu must be held.
func (s *Server) afterFrame(p faultPlan) {
	if p.noNewline {
		s.out.close()
		s.exit(fmt.Errorf("%w: WithNoFinalNewline(%d)", ErrExited, p.n))
	}
	if p.closeStdout {
		s.out.close()
		s.logf("stdout closed after message %d (WithCloseStdout)", p.n)
	}
}
