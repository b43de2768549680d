package fakeserver

import (
	"errors"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// isToolsCall reports whether frame is a tools/call request.
func isToolsCall(frame []byte) bool {
	m, err := wire.ParseMessage(frame)
	return err == nil && m.IsRequest() && m.Method == wire.MethodToolsCall
}

// fillStdin is Faults.FillStdinAfterCall: reading stops for good and, in a
// server started by ServeStdio, the stdin pipe is filled; the report then
// says how full, and when the host closes its end (Report.EOFAt, though
// nothing is read), until the session ends otherwise (a signal, a fault's
// exit).
func (s *Server) fillStdin() error {
	fill, capacity, err := 0, 0, errors.New("only a server started by ServeStdio fills its stdin")
	if s.stdio {
		fill, capacity, err = fillPipe()
	}
	if err != nil {
		s.logf("stopped reading stdin after the first tools/call; its pipe not filled: %v (FillStdinAfterCall)", err)
	} else {
		s.logf("stopped reading stdin after the first tools/call; its pipe filled to %d of %d bytes (FillStdinAfterCall)", fill, capacity)
	}
	s.update(func(r *Report) {
		r.StdinStopped, r.StdinFill, r.StdinCapacity = time.Now(), fill, capacity
		if err != nil {
			r.StdinFillError = err.Error()
		}
	})
	// Nothing is written to stderr from here on: a host that closes its
	// end of it would end the fake by SIGPIPE at that line, and change
	// what the criterion sees.
	if err == nil && waitHangup(s.base) {
		s.update(func(r *Report) { r.EOF, r.EOFAt = true, time.Now() })
	}
	<-s.base.Done()
	return s.base.Err()
}
