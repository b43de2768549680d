package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Notification is a notification the server sent, as the session keeps it.
type Notification struct {
	Method string
	Params json.RawMessage // nil if longer than Limits.NotificationHead: then Head has its first bytes
	Head   []byte
	Size   int64     // the frame's bytes on the wire, without the newline
	At     time.Time // when the host read it
}

// kept is a notification in the store.
type kept struct {
	n     Notification
	taken bool // returned by WaitNotification; its bytes are released
}

// WaitNotification returns the oldest kept notification with method that no
// earlier call returned, waiting for one, bounded by ctx and the session
// timeout; a closed session gives a kept one or ErrClosed at once.
func (s *Session) WaitNotification(ctx context.Context, method string) (*Notification, error) {
	// Only kept ones (Limits) can be had.
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for {
		s.mu.Lock()
		for i := range s.notifications.n {
			if k := s.notifications.at(i); !k.taken && k.n.Method == method {
				n := k.n
				k.taken, k.n = true, Notification{}
				s.notifications.resize(i, 0)
				s.mu.Unlock()
				return &n, nil
			}
		}
		ch := s.changedLocked()
		err := s.closedErrLocked("waiting for notification " + method)
		ended := s.stdoutErr != nil
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if ended {
			return nil, s.waitError("waiting for notification "+method, fmt.Errorf("server stdout ended"))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, s.waitError("waiting for notification "+method, ctx.Err())
		}
	}
}

// takeNotifications returns the kept notifications that no
// WaitNotification took, oldest first, and takes them.
func (s *Session) takeNotifications() []Notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Notification
	for i := range s.notifications.n {
		if k := s.notifications.at(i); !k.taken {
			out = append(out, k.n)
			k.taken, k.n = true, Notification{}
			s.notifications.resize(i, 0)
		}
	}
	return out
}

// TranscriptEntry is a frame in the transcript, or an event of the session.
type TranscriptEntry struct {
	Seq  int64 // 0, 1, 2, … in the order entries were added, dropped ones counted
	At   time.Time
	Dir  string // "→" host to server, "←" server to host, "!" an event (negotiation, errors, stalls)
	Size int64  // bytes on the wire, without the newline
	Head []byte // the first bytes of the frame (Limits.Head), or the event
	Junk bool   // a frame from the server that is not a JSON-RPC message
}

// line formats the entry as one line: time, direction, head and size.
func (e TranscriptEntry) line() string {
	if e.Dir == "!" {
		return fmt.Sprintf("%s ! %s", e.At.Format("15:04:05.000"), e.Head)
	}
	more := ""
	if int64(len(e.Head)) < e.Size {
		more = fmt.Sprintf("… (%d bytes)", e.Size)
	}
	return fmt.Sprintf("%s %s %s%s", e.At.Format("15:04:05.000"), e.Dir, e.Head, more)
}

// Transcript returns the newest entries of the transcript, oldest first
// (Limits.Transcript, Limits.Head): frames both ways and the session's events.
func (s *Session) Transcript() []TranscriptEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TranscriptEntry, s.transcript.n)
	for i := range out {
		out[i] = *s.transcript.at(i)
		out[i].Head = bytes.Clone(out[i].Head) // the ring reuses its buffers
	}
	return out
}

// recordLocked adds a frame to the transcript, reusing the buffer of the
// entry it replaces; s.mu held.
func (s *Session) recordLocked(at time.Time, dir string, size int64, frame []byte) {
	e := s.transcript.slot(0)
	e.At, e.Dir, e.Size, e.Junk = at, dir, size, false
	e.Seq = s.transcript.dropped + int64(s.transcript.n) - 1
	e.Head = append(e.Head[:0], frame[:min(len(frame), s.cfg.limits.Head)]...)
}

// logf records an event of the session's own in the transcript.
func (s *Session) logf(format string, args ...any) {
	s.mu.Lock()
	s.logLocked(format, args...)
	s.mu.Unlock()
}

// logLocked is logf with s.mu held. Events are kept whole, not cut to
// Limits.Head.
func (s *Session) logLocked(format string, args ...any) {
	e := s.transcript.slot(0)
	e.At, e.Dir, e.Junk = time.Now(), "!", false
	e.Seq = s.transcript.dropped + int64(s.transcript.n) - 1
	e.Head = fmt.Appendf(e.Head[:0], format, args...)
	e.Size = int64(len(e.Head))
}
