package fakeserver

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// endedByCR reports whether a line read so far ended in "\r\n": every
// terminator is a "\n" of a frame, an empty line or an oversized frame, or
// the "\r" before one.
func endedByCR(st pipes.FramerStats) bool {
	return st.Terminators-st.Frames-st.EmptyLines-st.Oversized > 0
}

// endOnCRLF is Faults.EndOnCRLF: the session ends, stdout closed, the
// line not handled.
func (s *Server) endOnCRLF(st pipes.FramerStats) error {
	s.logf("stdin: a line ended in \\r\\n after %d bytes: ending (EndOnCRLF)", st.Bytes-st.Pending)
	s.out.close()
	err := fmt.Errorf("%w: EndOnCRLF: a line ended in \\r\\n", ErrExited)
	s.exit(err)
	return err
}
