package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// play plays the record's server side.
func (s *server) play(ctx context.Context) error {
	closeAt := time.Duration(-1)
	if s.rec.ServerEOF >= 0 && (s.rec.HostEOF < 0 || s.rec.ServerEOF < s.rec.HostEOF) {
		closeAt = s.rec.ServerEOF
	}
	c := clock{pace: s.pace}
	closed := false
	for _, a := range schedule(s.rec, []string{record.DirOut, record.DirErr}, s.rec.Server, s.stalls, closeAt) {
		// What the recorded server had received before this, and the
		// request of each response in it (whatever the record's clocks
		// say, a response comes after its request).
		err := c.next(ctx, a.t, func(gap time.Duration) error {
			if err := s.waitHost(ctx, a.t, s.requestsOf(a), s.pace.bound(gap)); err != nil {
				return err
			}
			return s.serveStall(ctx, a.t, a.resume >= 0)
		})
		if err != nil {
			return err
		}
		if a.stall >= 0 {
			continue // the gate stopped stdin at its point (serveArm)
		}
		if a.resume >= 0 {
			s.serveResume(a.resume)
			continue
		}
		closed = closed || a.close
		wrote, err := s.do(a)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if a.chunk != nil && a.chunk.Dir == record.DirErr {
				continue // a host that does not take stderr does not stop the play
			}
			return fmt.Errorf("replay: the played server's write failed: %w", err)
		}
		if wrote {
			s.mu.Lock()
			s.report.Played++
			s.mu.Unlock()
		}
	}
	var end time.Duration
	for _, e := range s.rec.Events {
		end = max(end, us(e.T))
	}
	s.endStalls(ctx, true, end)
	if closed {
		return nil
	}
	// The recorded server went on until the host closed its stdin.
	return s.waitFor(ctx, func() bool { return s.eof }, 0)
}

// do does one action; wrote says it wrote bytes (a chunk holds none when
// the requests its responses answer never came).
func (s *server) do(a action) (wrote bool, err error) {
	var b []byte
	switch {
	case a.close:
		s.flushReplies()
		return false, s.stdout.Close()
	case a.chunk != nil && a.chunk.Dir == record.DirErr:
		if b, _ = s.rec.ChunkBytes(a.chunk, nil); len(b) > 0 {
			_, err = s.stderr.Write(b)
		}
		return len(b) > 0, err
	case a.chunk != nil:
		b = s.chunkBytes(a.chunk)
	default:
		b = s.frameLine(a.frame, true)
	}
	return len(b) > 0, s.writeOut(b)
}

// requestsOf returns the host requests answered by the responses a
// writes.
func (s *server) requestsOf(a action) []int {
	var out []int
	add := func(j int) {
		if i, ok := s.respTo[j]; ok {
			out = append(out, i)
		}
	}
	switch {
	case a.chunk != nil && a.chunk.Dir == record.DirOut:
		for _, p := range a.chunk.Parts {
			if p.Frame >= 0 {
				add(p.Frame)
			}
		}
	case a.chunk == nil && a.frame >= 0:
		add(a.frame)
	}
	return out
}

// waitHost waits, at most bound, for the host frames the recorded server
// could have had by t, and for those in also; those that do not come are
// reported Missing.
func (s *server) waitHost(ctx context.Context, t time.Duration, also []int, bound time.Duration) error {
	// What the proxy had read whole of the host's by t (its read stamp
	// comes before it writes the bytes on, so before the server could act
	// on them), and, until the recorded server read its stdin again after
	// it stopped, only up to where it stopped.
	need := func() []int {
		limit := int64(-1)
		if s.armed {
			limit = s.stalls[s.stall].At
		}
		var out []int
		for i, f := range s.rec.Host {
			if !s.got[i] && f.T <= t && !f.Unterminated && (limit < 0 || f.Off+f.Size <= limit) {
				out = append(out, i)
			}
		}
		for _, i := range also {
			if !s.got[i] {
				out = append(out, i)
			}
		}
		return out
	}
	hostEOF := s.rec.HostEOF >= 0 && s.rec.HostEOF <= t
	err := s.waitFor(ctx, func() bool {
		if len(need()) > 0 {
			// The gate may have stopped inside a message the recorded
			// server had, or before the request of a response it sends.
			if s.framer.Stats().Pending > 0 || slices.ContainsFunc(also, func(i int) bool { return !s.got[i] }) {
				s.letThrough()
			}
			return false
		}
		return !hostEOF || s.eof
	}, bound)
	if err != errGaveUp {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range need() {
		if s.got[i] {
			continue // listed twice
		}
		f := &s.rec.Host[i]
		s.got[i] = true
		text := fmt.Sprintf("the host did not send it within %v", bound.Round(time.Millisecond))
		if s.eof {
			text = "the host closed stdin without sending it"
		}
		s.depart(Departure{Kind: Missing, Seq: f.Seq, Dir: record.DirIn, Method: f.Method, ID: f.ID, Text: text})
	}
	return nil
}

var errGaveUp = errors.New("gave up")

// waitFor waits until cond (called with s.mu held) holds, writing replies
// meanwhile; bound > 0 limits the wait (errGaveUp).
func (s *server) waitFor(ctx context.Context, cond func() bool, bound time.Duration) error {
	var expired <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		expired = t.C
	}
	for {
		// The change channel is taken before the replies are flushed: a
		// reply added after the flush closes it, and is written on the
		// next turn, not left until some later change.
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		s.flushReplies()
		s.mu.Lock()
		ok, eof := cond(), s.eof
		s.mu.Unlock()
		if ok {
			return nil
		}
		if eof && bound > 0 {
			return errGaveUp // nothing more can come
		}
		select {
		case <-ch:
		case <-expired:
			return errGaveUp
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// flushReplies writes the answers to requests the record has not.
func (s *server) flushReplies() {
	s.mu.Lock()
	rs := s.replies
	s.replies = nil
	s.mu.Unlock()
	for _, r := range rs {
		_ = s.writeOut(r)
	}
}

func (s *server) writeOut(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	_, err := s.stdout.Write(b)
	return err
}

// chunkBytes returns a stdout chunk's bytes as played: ids and progress
// tokens mapped to the host's, the responses to requests that never came
// left out, and an error response in place of a response the record has
// only the head of.
func (s *server) chunkBytes(c *Chunk) []byte {
	b, _ := s.rec.ChunkBytes(c, func(i int, _ *Frame) []byte { return s.frameLine(i, false) })
	// A line played to its end is not kept.
	s.mu.Lock()
	for _, p := range c.Parts {
		if f := &s.rec.Server[max(p.Frame, 0)]; p.Frame >= 0 && f.Whole() && int64(p.To) >= f.Size+1 {
			delete(s.lines, p.Frame)
		}
	}
	s.mu.Unlock()
	// A frame without its body ends in this chunk: answer in its place.
	for k, p := range c.Parts {
		if p.Frame < 0 || s.rec.Server[p.Frame].Whole() {
			continue
		}
		if k+1 < len(c.Parts) && c.Parts[k+1].Frame == p.Frame {
			continue
		}
		if last := lastPart(s.rec, record.DirOut, p.Frame); last == c {
			b = append(b, s.frameLine(p.Frame, true)...)
		}
	}
	return b
}

// lastPart returns the chunk that holds the end of frame i of dir d.
func lastPart(r *Record, d string, i int) *Chunk {
	var last *Chunk
	for k := range r.Chunks {
		c := &r.Chunks[k]
		if c.Dir != d {
			continue
		}
		for _, p := range c.Parts {
			if p.Frame == i {
				last = c
			}
		}
	}
	return last
}

// frameLine returns the line to play for server frame i: mapped to the
// host's ids and tokens, nil to leave it out. whole says the frame is
// played as a line of its own (not through chunk parts), so a frame
// without its body gets a stand-in.
func (s *server) frameLine(i int, whole bool) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lines[i]; ok {
		return l
	}
	f := &s.rec.Server[i]
	var l []byte
	switch {
	case !f.Whole():
		if !whole {
			return nil
		}
		s.depart(Departure{Kind: Unchecked, Seq: f.Seq, Dir: record.DirOut, Method: f.Method, ID: f.ID, Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): not played", len(f.Head), f.Size)})
		if f.Kind == record.KindResponse || f.Kind == record.KindError {
			if id, ok := s.hostID(i); ok {
				l = errorLine(id, wire.CodeInternalError, fmt.Sprintf("mcpstdio replay: the record has only the head of this response (%d of %d bytes)", len(f.Head), f.Size))
			}
		}
	case f.Kind == record.KindResponse || f.Kind == record.KindError:
		id, ok := s.hostID(i)
		if ok {
			l = f.LineWith(id, "id")
		} // else the request never came: leave the answer out
	case f.Kind == record.KindNotification && f.Method == wire.MethodProgress && len(f.Token) > 0:
		l = f.Line()
		if tok, ok := s.tokenMap[wire.Key(f.Token)]; ok {
			l = f.LineWith(tok, "params", wire.MetaProgressToken)
		}
	default:
		l = f.Line()
	}
	s.lines[i] = l
	return l
}

// hostID returns the id the host sent the request that recorded response
// i (a server frame) answers under, if it came; s.mu held.
func (s *server) hostID(i int) (json.RawMessage, bool) {
	h, ok := s.respTo[i]
	if !ok {
		return nil, false
	}
	id, ok := s.hostIDs[h]
	return id, ok
}

// finish reports the recorded host messages that never came; s.mu held.
func (s *server) finish() {
	for i, f := range s.rec.Host {
		if s.got[i] {
			continue
		}
		s.got[i] = true
		s.depart(Departure{Kind: Missing, Seq: f.Seq, Dir: record.DirIn, Method: f.Method, ID: f.ID, Text: "the host never sent it"})
	}
	if s.rec.Cut != "" {
		s.report.Notes = append(s.report.Notes, s.rec.Cut+": played up to it")
	}
	s.report.Stalls = s.checks
	s.report.strict, s.report.headsOnly = s.o.strict, !s.rec.Header.Bodies
	if s.lost > 0 {
		s.report.Notes = append(s.report.Notes, fmt.Sprintf("%d host messages came where the record lost detail: not checked", s.lost))
	}
	if s.readErr != nil {
		s.report.Notes = append(s.report.Notes, "reading the host's stdin failed: "+s.readErr.Error())
	}
}
