package mcptest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The host's stdout reader. One goroutine reads the server's stdout for
// the whole life of the server: valve (StallReads) → framer with the
// transport limit (WithMaxFrame) → dispatch. It parses each frame, routes
// a response to its Pending, counts and keeps a notification, and queues a
// server-to-host request for a goroutine of its own that runs the
// WithServerRequests handler and writes the answer. Frames over the limit
// are never parsed: a scanner follows each line's JSON structure in
// constant memory to find its top-level "id", so an oversized response
// fails its own request with a *pipes.FrameTooLargeError, wherever the
// "id" is in the frame. Lines that are not JSON-RPC are counted and kept,
// bounded, and the session goes on. Stderr is drained into a bounded
// capture on a third goroutine.
//
// The reader waits for nothing but the kernel and its own CPU work: it
// never runs test code (a handler, a WithStderr writer), never waits for a
// test to consume notifications, and never writes to the server's stdin,
// which a server that does not read it could block. It dispatches each
// message itself rather than hand it to a dispatcher through a queue: the
// work is parsing, which bounds any host's speed anyway, and with no queue
// between reading and dispatching there is no queue to fill, so no burst a
// live server writes — junk at start-up, a response followed by thousands
// of notifications, a progress flood — can make the host drop a message or
// end the session. The time stdout goes unread while the reader works is
// measured (Stats.ReaderBusyTime).

// readLoop is the stdout reader and dispatcher. It runs for the whole life
// of the server and waits for nothing but the kernel and its own CPU work:
// parsing, routing a response to its Pending, keeping a notification in a
// bounded store, queueing a server request for the handler goroutine (or
// dropping it when that queue is full). Nothing it does runs test code or
// waits on a lock held across a wait.
func (s *Session) readLoop() {
	defer s.wg.Done()
	for {
		frame, err := s.framer.Next()
		if err == nil {
			s.dispatch(frame)
			continue
		}
		var tooLarge *pipes.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			s.oversized(err, s.in.pop())
			continue
		}
		s.stdoutEnded(err)
		return
	}
}

// stdoutEnded records how stdout ended and fails what can no longer be
// answered. readerDone is closed first: whoever sees a request failed by
// the end of stdout also sees readerDone closed.
func (s *Session) stdoutEnded(err error) {
	var trunc *pipes.TruncatedFrameError
	if errors.As(err, &trunc) && trunc.Oversized {
		s.oversized(err, s.in.current())
	}
	if errors.Is(err, pipes.ErrValveClosed) || errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	}
	s.mu.Lock()
	s.stdoutErr = err
	if trunc != nil {
		s.logLocked("%v", err)
	}
	close(s.readerDone)
	var end error
	switch {
	case errors.Is(err, io.EOF), trunc != nil:
		end = errors.New("mcptest: server closed its stdout")
		if ex := s.proc.exit(); ex.How != "" {
			end = fmt.Errorf("mcptest: server closed its stdout: it has ended (%s)", ex)
		}
	case err == ErrClosed && s.stdoutGone:
		end = errHostClosedStdout
	case err == ErrClosed:
		end = err
	default:
		end = fmt.Errorf("mcptest: reading server stdout: %w", err)
	}
	s.endLocked(end)
	s.mu.Unlock()
}

// oversized handles a frame over the transport limit: it is never parsed;
// the request its envelope names fails at once.
func (s *Session) oversized(err error, e wire.Envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastFrame = time.Now()
	dup := ""
	if e.DuplicateID {
		dup = ` (with a second "id" key: routed by the first)`
	}
	s.logLocked("oversized frame (id %s%s): %v", orNone(e.ID), dup, err)
	if n, ok := (&wire.Message{ID: e.ID}).IntID(); ok {
		if p := s.pending[n]; p != nil {
			delete(s.pending, n)
			p.complete(nil, fmt.Errorf("mcptest: response to %s id=%d: %w", p.method, p.id, err))
		}
	}
	s.bumpLocked()
}

func orNone(id []byte) string {
	if len(id) == 0 {
		return "not found"
	}
	return string(id)
}

// dispatch parses and handles one frame. It aliases the framer's buffer:
// what is kept is copied.
func (s *Session) dispatch(frame []byte) {
	now := s.in.lastRead // when the read(2) that completed the frame returned
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastFrame = now
	// The reader's own Message, reused: a flood allocates none per frame.
	perr := wire.ParseMessageInto(&s.in.msg, frame)
	s.dispatchLocked(frame, perr, now)
	s.bumpLocked()
}

// dispatchLocked handles one frame, parsed into s.in.msg (perr its
// error); s.mu held.
func (s *Session) dispatchLocked(frame []byte, perr error, now time.Time) {
	msg := &s.in.msg
	e := s.entryLocked(now, "←", int64(len(frame)))
	if perr == nil && msg.Method != "" && !msg.IsRequest() {
		s.notificationLocked(msg, frame, now, e) // it sets e's Head
		return
	}
	e.setHead(frame[:min(len(frame), s.cfg.limits.Head)])
	switch {
	case perr != nil:
		e.Junk = true
		s.badFrameLocked(frame, perr)
	case msg.Method == "": // parsed, and without a method: a response (ParseMessage)
		s.routeLocked(msg, frame)
	default: // a request: a notification is handled above
		s.serverRequestLocked(msg, len(frame))
	}
}

// badFrameLocked counts and keeps a frame that is not a JSON-RPC message.
func (s *Session) badFrameLocked(frame []byte, err error) {
	switch {
	case errors.Is(err, wire.ErrBatch):
		s.stats.Batches++
		s.stats.ProtocolViolations++
		s.batchLocked(frame)
	case errors.Is(err, wire.ErrDuplicateKey):
		s.stats.ParseErrors++
		s.stats.ProtocolViolations++
		s.duplicateKeyLocked(frame, err)
	case looksJSON(frame):
		s.stats.ParseErrors++
	default:
		s.stats.JunkLines++
	}
	slot := s.junk.slot(0)
	*slot = append((*slot)[:0], frame[:min(len(frame), s.cfg.limits.Head)]...)
	if s.junk.dropped > s.stats.JunkDropped {
		s.stats.JunkDropped = s.junk.dropped
		s.overflowLocked("junk", s.cfg.limits.Junk)
	}
}

func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// batchLocked notes a JSON-RPC batch and fails, at once, each pending
// request a response in it names: MCP has no batches since 2025-06-18, and
// no host built on this package sends one, so none is routed.
func (s *Session) batchLocked(frame []byte) {
	var elems []json.RawMessage
	_ = json.Unmarshal(frame, &elems)
	s.logLocked("protocol violation: a JSON-RPC batch of %d messages on stdout (MCP has no batches since %s); not routed", len(elems), wire.Version20250618)
	for _, e := range elems {
		m, err := wire.ParseMessage(e)
		if err != nil || !m.IsResponse() {
			continue
		}
		if n, ok := m.IntID(); ok {
			s.failLocked(n, fmt.Errorf("the server answered it inside a JSON-RPC batch (%d messages), which MCP does not allow since %s", len(elems), wire.Version20250618))
		}
	}
}

// duplicateKeyLocked notes a frame with an envelope key twice. The rule is
// the one for oversized frames (which are only scanned): the request named
// by the first "id" fails, whatever the later one says.
func (s *Session) duplicateKeyLocked(frame []byte, err error) {
	var first wire.Envelope
	wire.NewScanner(func(e wire.Envelope) { first = e; first.ID = bytes.Clone(e.ID) }).Write(append(bytes.Clone(frame), '\n'))
	s.logLocked("protocol violation: %v (first id %s); not routed", err, orNone(first.ID))
	if n, ok := (&wire.Message{ID: first.ID}).IntID(); ok {
		s.failLocked(n, fmt.Errorf("a response naming it has a duplicate envelope key (%v), so it was not routed", err))
	}
}

// failLocked fails pending request id, if there is one, with why.
func (s *Session) failLocked(id int64, why error) {
	p := s.pending[id]
	if p == nil {
		return
	}
	delete(s.pending, id)
	p.complete(nil, fmt.Errorf("mcptest: %s id=%d: %w", p.method, id, why))
}

// routeLocked delivers a response to its Pending.
func (s *Session) routeLocked(msg *wire.Message, frame []byte) {
	size := len(frame)
	id, ok := msg.IntID()
	p := s.pending[id]
	if !ok || p == nil {
		s.stats.UnknownIDs++
		s.logLocked("response with unknown id %s", msg.ID)
		s.mismatchLocked(msg.ID)
		return
	}
	delete(s.pending, id)
	p.respSize.Store(int64(size))
	late := p.cancelled.Load()
	if late {
		s.stats.LateResponses++
	}
	s.stats.Responses++
	// The error object was decoded, so it owns its bytes; the result
	// aliases the framer's buffer.
	// A short line is not scanned as it arrives (stdoutSource), so its
	// start is the framer's.
	off := p.respStart.Load()
	if off < 0 {
		off = s.framer.FrameStart(frame)
	}
	p.complete(&Response{ID: id, Result: bytes.Clone(msg.Result), Error: msg.Error, Late: late, Offset: off, Size: int64(size)}, nil)
}

// mismatchLocked fails, at once, the pending request whose id an unknown
// response id equals by value but not as JSON ("2" or 2.0 for 2): JSON-RPC
// requires the very id, and a host that compares ids as JSON would never
// route it, so the request cannot be answered.
func (s *Session) mismatchLocked(id json.RawMessage) {
	n, kind, ok := looseID(id)
	if !ok || s.pending[n] == nil {
		return
	}
	s.failLocked(n, fmt.Errorf("a response with id %s (%s) arrived; this request's id is %d (a number): JSON-RPC requires the same id, so it was counted as an unknown id (Stats.UnknownIDs)", id, kind, n))
}

// looseID reads an id that is not a plain integer as one, if its value is:
// a string holding an integer, or a number written with a fraction or an
// exponent.
func looseID(id json.RawMessage) (n int64, kind string, ok bool) {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return 0, "", false
	}
	if id[0] == '"' {
		var str string
		if json.Unmarshal(id, &str) != nil {
			return 0, "", false
		}
		n, err := strconv.ParseInt(str, 10, 64)
		return n, "a string", err == nil
	}
	f, err := strconv.ParseFloat(string(id), 64)
	if err != nil || f != float64(int64(f)) {
		return 0, "", false
	}
	return int64(f), "a number written differently", true
}

// notificationLocked counts a notification and keeps it, bounded, in the
// store's slot, reusing the buffer the slot still holds (its oldest
// notification's, dropped to make room, which nobody was given: a taken
// one leaves none) when its capacity is not much more than needed: the
// byte budget counts lengths, so a buffer kept is never much larger than
// what it holds. A flood then costs no allocation per notification. It
// sets the Head of e, the frame's transcript entry: a short notification
// kept whole shares the copy the store keeps, whose params are sliced out
// of it (see kept), and any other gets a copy of its own.
func (s *Session) notificationLocked(msg *wire.Message, frame []byte, at time.Time, e *entry) {
	s.stats.Notifications++
	if len(s.progress) > 0 && msg.Method == wire.MethodProgress { // only tokens the host gave out are counted
		s.countProgressLocked(wire.Member(msg.Params, wire.MetaProgressToken))
	}
	l := &s.cfg.limits
	size := int64(len(frame))
	whole := len(frame) <= l.NotificationHead
	if !whole {
		size = int64(l.NotificationHead)
		s.stats.NotificationsCut++
	}
	k := s.notifications.put(size)
	// Field by field, each once: the struct written whole costs a copy of
	// all of it.
	k.taken, k.n.Method, k.n.Size, k.n.At = false, msg.Method, int64(len(frame)), at
	p := -1 // where the params begin in frame (msg.Params is a slice of it)
	if msg.Params != nil {
		p = bytes.Index(frame, msg.Params)
	}
	switch {
	case !whole:
		k.n.Params, k.n.Head, k.buf, k.tseq = nil, bytes.Clone(frame[:l.NotificationHead]), nil, 0
		e.setHead(frame[:min(len(frame), l.Head)])
	case s.shareHeads && len(frame) <= l.Head && (p >= 0 || msg.Params == nil):
		buf := k.buf[:0]
		if cap(buf) < len(frame) || cap(buf) > min(2*len(frame)+64, l.Head) { // a buffer shared is at most Limits.Head
			buf = make([]byte, 0, len(frame))
		}
		buf = append(buf, frame...)
		var params []byte
		if p >= 0 {
			params = buf[p : p+len(msg.Params) : p+len(msg.Params)]
		}
		k.n.Params, k.n.Head, k.buf, k.tseq = params, nil, buf, e.Seq+1
		e.share(buf[:len(frame):len(frame)])
	default:
		buf := k.buf[:0]
		if cap(buf) > 2*len(msg.Params)+64 {
			buf = nil
		}
		if msg.Params != nil {
			buf = append(buf, msg.Params...)
		} else {
			buf = nil
		}
		k.n.Params, k.n.Head, k.buf, k.tseq = buf, nil, buf, 0
		e.setHead(frame[:min(len(frame), l.Head)])
	}
	if l.OverflowEndSession && s.notifications.dropped > 0 { // Stats reads NotificationsDropped from the store
		s.overflowLocked("notifications", l.Notifications)
	}
}

// countProgressLocked counts a progress notification for its token, if the
// token is one the host gave out: the map stays bounded. A plain token is
// its own key (wire.Key), so the common case needs no allocation.
func (s *Session) countProgressLocked(tok json.RawMessage) {
	if _, ok := s.progress[string(tok)]; ok {
		s.progress[string(tok)]++
		return
	}
	if k := wire.Key(tok); k != "" && k != string(tok) {
		if _, ok := s.progress[k]; ok {
			s.progress[k]++
		}
	}
}

// overflowLocked applies Limits.OverflowEndSession when the bound of what
// was dropped is reached.
func (s *Session) overflowLocked(what string, bound int) {
	if !s.cfg.limits.OverflowEndSession || s.ended != nil {
		return
	}
	err := fmt.Errorf("%w: the server's %s exceeded what the host keeps (Limits.OverflowEndSession: %d, or the byte budget); stdout is still read", ErrClosed, what, bound)
	s.logLocked("%v", err)
	s.endLocked(err)
}
