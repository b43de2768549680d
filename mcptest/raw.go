package mcptest

import (
	"encoding/json"

	"github.com/mcpstdio/mcpstdio/internal/hostctl"
)

// This file is the seam for a host that writes its own bytes (WriteStdin)
// and still wants the session's routing: a replay of a recorded host
// (package replay) writes the recorded chunks as they were cut, and waits
// on what the session reads (through internal/hostctl, see ctl.go).

// expect is hostctl.Expect.
func (s *Session) expect(id int64, method string, params json.RawMessage) (*Pending, error) {
	// The caller may write it in any pieces, along with other bytes; the
	// progress token is taken from params, the request's params as written. A
	// cancel the caller writes for it is not seen by the session: its response
	// is not marked Late.
	p := s.newPending(id, method)
	if err := s.addPending(p, params); err != nil {
		return nil, err
	}
	return p, nil
}

// TakeNotifications returns and takes the kept notifications no
// WaitNotification has taken, oldest first (drops: Stats.NotificationsDropped).
func (s *Session) TakeNotifications() []Notification { return s.takeNotifications() }

// changedChan is hostctl.Changed.
func (s *Session) changedChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changedLocked()
}

// stdoutState is hostctl.Stdout.
func (s *Session) stdoutState() hostctl.StdoutState {
	s.mu.Lock() // as in Stats
	fs := s.framer.Stats()
	s.mu.Unlock()
	st := hostctl.StdoutState{
		Read: s.valve.BytesRead(), Stalled: s.valve.Stalled(),
		Framed: fs.Bytes, Partial: fs.Pending,
		Buffered: -1, Capacity: s.stdout.Capacity(),
		Ended: isClosed(s.readerDone),
	}
	if b, err := s.stdout.Buffered(); err == nil {
		st.Buffered = b
	}
	return st
}
