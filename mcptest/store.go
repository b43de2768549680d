package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Notification is a notification the server sent, as the session keeps it
// (see Limits).
type Notification struct {
	Method string
	// Params are the notification's params, or nil if it was longer than
	// Limits.NotificationHead: then Head holds its first bytes.
	Params json.RawMessage
	Head   []byte
	Size   int64     // the frame's bytes on the wire, without the newline
	At     time.Time // when the host read it
}

// kept is a notification in the store.
type kept struct {
	n     Notification
	buf   []byte // the slot's buffer, reused: n.Params's bytes, or the whole frame when the transcript shares it
	tseq  int64  // 1 + the Seq of the transcript entry whose Head is buf's bytes (notificationLocked); 0 if none
	taken bool   // returned by WaitNotification; its bytes are released
}

// A transcript entry of a short notification kept whole shares the copy
// the store keeps (the frame's, which its Params is sliced out of) rather
// than copying the frame a second time: a flood then costs one copy a frame,
// not two. The store reuses a slot's buffer
// only when the ring was full by count, after Limits.Notifications newer
// notifications, each with a transcript entry of its own, so an entry
// sharing it has been dropped by then when Limits.Transcript is not larger
// (Session.shareHeads); a notification given away (WaitNotification) first
// gives such an entry still in the transcript a copy of its own
// (unshareLocked), and a buffer the store drops otherwise is not reused. A
// transcript entry holds one buffer either way, of at most about
// Limits.Head bytes: its own, or a shared one no longer than Limits.Head.

// takeLocked returns the notification of k and takes it; s.mu held.
func (s *Session) takeLocked(k *kept) Notification {
	n := k.n
	if k.tseq > 0 {
		s.unshareLocked(k.tseq - 1)
	}
	k.taken, k.n, k.buf, k.tseq = true, Notification{}, nil, 0
	return n
}

// unshareLocked gives transcript entry seq, if it is still in the
// transcript, a copy of its own of the head it shares with a notification
// being given away; s.mu held.
func (s *Session) unshareLocked(seq int64) {
	i := seq - s.transcript.dropped
	if i < 0 || i >= int64(s.transcript.n) {
		return
	}
	if e := s.transcript.at(int(i)); e.shared {
		e.setHead(e.Head)
	}
}

// WaitNotification returns the oldest kept notification with method that no
// earlier WaitNotification or TakeNotifications returned, waiting for one
// to arrive, bounded by ctx and the session timeout (a *WaitError). The
// session keeps the newest notifications within Limits (by default 1024 and
// 16 MiB); older ones are counted in Stats.NotificationsDropped and cannot
// be waited for. Once stdout has ended it fails at once with a *WaitError
// if none is kept. On a closed session it returns a kept notification if
// there is one, and otherwise fails at once with an error wrapping
// ErrClosed.
func (s *Session) WaitNotification(ctx context.Context, method string) (*Notification, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for {
		s.mu.Lock()
		for i := range s.notifications.n {
			if k := s.notifications.at(i); !k.taken && k.n.Method == method {
				n := s.takeLocked(k)
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
			out = append(out, s.takeLocked(k))
			s.notifications.resize(i, 0)
		}
	}
	return out
}

// TranscriptEntry is one frame in the session's transcript, or an event of
// the session's own.
type TranscriptEntry struct {
	Seq  int64 // 0, 1, 2, … in the order entries were added, dropped ones counted
	At   time.Time
	Dir  string // "→" host to server, "←" server to host, "!" an event (negotiation, errors, stalls)
	Size int64  // bytes on the wire, without the newline
	Head []byte // the first bytes of the frame (Limits.Head), or the event
	// Junk marks a frame from the server that is not a JSON-RPC message
	// (counted in Stats.JunkLines, ParseErrors or Batches).
	Junk bool
}

// entry is a transcript entry as the transcript ring keeps it.
type entry struct {
	TranscriptEntry
	own    []byte // the entry's own buffer, reused; nil while it shares
	shared bool   // Head is a kept notification's buffer (kept.buf), not own
}

// setHead makes a copy of b, in the entry's own buffer, its Head.
func (e *entry) setHead(b []byte) {
	e.own = append(e.own[:0], b...)
	e.Head, e.shared = e.own, false
}

// share makes b, a kept notification's buffer, its Head; the entry's own
// buffer is let go, so that the entry holds only one.
func (e *entry) share(b []byte) { e.Head, e.own, e.shared = b, nil, true }

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

// Transcript returns the newest entries of the transcript
// (Limits.Transcript, by default 256), oldest first: frames both ways, each
// cut to Limits.Head bytes, and the session's events. The entries are
// copies the caller owns.
func (s *Session) Transcript() []TranscriptEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TranscriptEntry, s.transcript.n)
	for i := range out {
		out[i] = s.transcript.at(i).TranscriptEntry
		out[i].Head = bytes.Clone(out[i].Head) // the rings reuse their buffers
	}
	return out
}

// recordLocked adds a frame to the transcript, reusing the buffer of the
// entry it replaces; s.mu held.
func (s *Session) recordLocked(at time.Time, dir string, size int64, frame []byte) {
	s.entryLocked(at, dir, size).setHead(frame[:min(len(frame), s.cfg.limits.Head)])
}

// entryLocked adds an entry for a frame to the transcript and returns it,
// for the caller to set its Head; s.mu held.
func (s *Session) entryLocked(at time.Time, dir string, size int64) *entry {
	e := s.transcript.slot(0)
	e.At, e.Dir, e.Size, e.Junk = at, dir, size, false
	e.Seq = s.transcript.dropped + int64(s.transcript.n) - 1
	return e
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
	e.own = fmt.Appendf(e.own[:0], format, args...)
	e.Head, e.shared, e.Size = e.own, false, int64(len(e.own))
}
