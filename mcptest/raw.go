package mcptest

import "encoding/json"

// This file is the seam for a host that writes its own bytes (WriteStdin)
// and still wants the session's routing: a replay of a recorded host
// (package replay) writes the recorded chunks as they were cut, and waits
// on what the session reads.

// Expect enters a request with id, which the caller writes itself with
// WriteStdin, as pending: its response and progress go to the Pending as for
// Send. It fails if the session has ended or a request with id is pending.
func (s *Session) Expect(id int64, method string, params json.RawMessage) (*Pending, error) {
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

// Changed returns a channel closed at the next change a waiter may care
// about: a frame dispatched, a request ended, stdout ended, the session closed.
func (s *Session) Changed() <-chan struct{} {
	// Bytes that arrive inside a frame change nothing: poll StdoutState for
	// them.
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changedLocked()
}

// StdoutState is a snapshot of the host's side of the server's stdout.
type StdoutState struct {
	Read    int64 // bytes the host has read from the pipe (Stats.StdoutBytes)
	Stalled bool  // reads are stalled (StallReads, or StallReadsAfter's bytes let through)
	// Framed is how many of the bytes read the framer has taken, Partial
	// how many of those belong to a line not yet ended, or to lines of one
	// read not yet dispatched (pipes.Framer.Stats); it is 0 exactly when
	// the framer holds no bytes.
	Framed, Partial int64
	// Buffered is how many bytes wait in the pipe, unread, and Capacity
	// the pipe's size; -1 and 0 where the system does not tell (off Linux).
	Buffered, Capacity int
	Ended              bool // stdout has ended and the reader is done
}

// StdoutState returns the state of the server's stdout now.
func (s *Session) StdoutState() StdoutState {
	s.mu.Lock() // as in Stats: the frames of a read being dispatched are counted when it lets go
	fs := s.framer.Stats()
	s.mu.Unlock()
	st := StdoutState{
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
