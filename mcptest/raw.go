package mcptest

import (
	"encoding/json"
)

// StdoutState is a snapshot of the host's side of the server's stdout, as
// Session.Stdout takes it. A host that writes its own bytes with
// WriteStdin (a replay of a recorded host, a criterion that cuts a request
// in pieces) reads it to know how far the server's output has come.
type StdoutState struct {
	Read    int64 // bytes the host has read from the pipe (Stats.StdoutBytes)
	Stalled bool  // reads are stalled (StallReads, or StallReadsAfter's bytes let through)
	// Framed is how many of the bytes read the framer has taken, Partial
	// how many of those belong to a line not yet ended; Partial is 0
	// exactly when the framer holds no bytes of an unfinished line.
	Framed, Partial int64
	// Buffered is how many bytes wait in the pipe, unread, and Capacity
	// the pipe's size; Buffered is -1 and Capacity 0 where the system does
	// not tell (off Linux).
	Buffered, Capacity int
	Ended              bool // stdout has ended and the reader is done
}

// Expect enters a request with id as pending, for a caller that writes the
// request's bytes itself with WriteStdin, in any pieces and along with
// other bytes: its response and its progress notifications then go to the
// returned Pending as they do for Send. The progress token is taken from
// params (the request's params as written). A notifications/cancelled the
// caller writes for it is not seen by the session, so its response is not
// marked Late; use Pending.Cancel for that. Expect fails if the session has
// ended or a request with id is already pending; it does not write. Send
// numbers its own requests 1, 2, 3, …: a caller that mixes both picks ids
// Send will not reach, or one of the two fails as a duplicate.
func (s *Session) Expect(id int64, method string, params json.RawMessage) (*Pending, error) {
	p := s.newPending(id, method)
	if err := s.addPending(p, params); err != nil {
		return nil, err
	}
	return p, nil
}

// TakeNotifications returns and takes the kept notifications no
// WaitNotification has taken, oldest first (drops: Stats.NotificationsDropped).
func (s *Session) TakeNotifications() []Notification { return s.takeNotifications() }

// Changed returns a channel that is closed at the next change a waiter may
// care about: a frame dispatched (or one over the transport limit
// discarded), a request ended, stdout ended, the server exited, the
// session ended or closed. Bytes that arrive inside a frame change nothing: a caller
// waiting for bytes polls Stdout as well (or calls WaitStdoutBytes). Call
// Changed again after each close for the next change.
func (s *Session) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changedLocked()
}

// Stdout returns the state of the server's stdout now. It does not block on
// the server or the reader.
func (s *Session) Stdout() StdoutState {
	s.mu.Lock() // as in Stats
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
