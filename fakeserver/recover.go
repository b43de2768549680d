package fakeserver

import (
	"fmt"
	"runtime/debug"

	"github.com/mcpstdio/mcpstdio/wire"
)

// catch, deferred on a goroutine the server started, recovers a panic there
// and records it (see Report.Panics), so that the server goes on. where
// names the code that was running.
func (s *Server) catch(where string) {
	if v := recover(); v != nil {
		s.panicked(where, v)
	}
}

// panicked records a recovered panic with the stack of the goroutine that
// panicked (it is called from a deferred function, before that stack
// unwinds) in the report and on stderr, and returns a one-line summary.
func (s *Server) panicked(where string, v any) string {
	msg := fmt.Sprintf("panic in %s: %v", where, v)
	stack := debug.Stack()
	s.update(func(r *Report) { r.Panics = append(r.Panics, msg+"\n\n"+string(stack)) })
	s.logf("%s\n%s", msg, stack)
	return msg
}

// handleRecovered is handle with a panic turned into an internal-error
// response (-32603) naming it.
func (s *Server) handleRecovered(w *work) (f *frame) {
	defer func() {
		if v := recover(); v != nil {
			f = errorFrame(w.rawID, wire.CodeInternalError, "fakeserver: "+s.panicked(w.String(), v), nil)
		}
	}()
	return s.handle(w)
}
