package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Serve returns a server that plays the server side of rec for a host
// under test, on the streams it is given (its signature is
// mcptest.ServeFunc; `mcpstdio replay -serve` runs it on stdio): the
// recorded stdout and stderr, cut into the recorded chunks, each written
// once the host has sent what the recorded server had received before
// writing it (causal), or also at the recorded time (Timed).
//
// The host's messages are matched to the recorded host's by order: the
// n-th request of a method to the n-th recorded one, and so on for
// notifications and junk; a response to the server's request by its id
// (the server's requests keep their recorded ids). A response is sent with
// the id the host gave its request, and a progress notification with the
// host's progress token. Each matched message is compared with the
// recorded one (see Record.Compare; the id and progress token as mapped);
// a request the record has not is answered with error -32601 and reported
// as Extra; a recorded host message that does not come within the bound
// (Patience) is reported as Missing, and what the server sent in answer to
// it is left out. A response the record has only the head of is answered
// with error -32603 saying so (Unchecked).
//
// The server ends as the recorded one did: if the recorded server closed
// its stdout before the host closed its stdin, once it has played
// everything; otherwise once the host closes stdin, or ctx ends. It reads
// its stdin all along, whatever it is writing: it does not reproduce a
// server that stops reading. It returns the Report's Err: nil when the
// host did as recorded.
func Serve(rec *Record, opts ...Option) func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		o, err := newOptions(opts)
		if err != nil {
			return err
		}
		s := newServer(rec, o, stdin, stdout, stderr)
		return s.run(ctx)
	}
}

// server plays the server side of a record.
type server struct {
	rec    *Record
	o      *options
	pace   Pace
	stdin  io.ReadCloser
	stdout io.WriteCloser
	stderr io.Writer
	start  time.Time

	writeMu sync.Mutex // stdout

	mu       sync.Mutex
	changed  chan struct{}
	report   Report
	got      []bool           // recorded host frames received (or given up on)
	reqs     map[string][]int // recorded host requests not yet matched, by method
	notes    map[string][]int // notifications, by method
	resps    map[string]int   // responses to the server's requests, by id
	junk     []int
	hostIDs  map[int]json.RawMessage    // a recorded request (host frame) → the id the host sent it under
	tokenMap map[string]json.RawMessage // recorded progress token → the host's
	recIDs   map[string]json.RawMessage // the host's request id → the recorded one
	replies  [][]byte                   // answers to requests the record has not, to write
	eof      bool                       // the host closed stdin
	readErr  error
	lines    map[int][]byte // server frame → its line as played
	respTo   map[int]int    // a recorded response (server frame) → its request (host frame)
	gaps     bool           // the record lost detail of what the host sent
	lost     int            // host messages taken for what the record lost
}

func newServer(rec *Record, o *options, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) *server {
	s := &server{
		rec: rec, o: o, pace: Pace{Speed: o.speed, IdleCap: o.idleCap, Patience: o.patience},
		stdin: stdin, stdout: stdout, stderr: stderr, start: time.Now(),
		changed: make(chan struct{}),
		got:     make([]bool, len(rec.Host)),
		reqs:    map[string][]int{}, notes: map[string][]int{}, resps: map[string]int{},
		hostIDs: map[int]json.RawMessage{}, tokenMap: map[string]json.RawMessage{}, recIDs: map[string]json.RawMessage{},
		lines: map[int][]byte{}, respTo: map[int]int{},
	}
	byID := map[string][]int{} // host requests by id, in order
	for i, f := range rec.Host {
		if f.Gap {
			s.got[i], s.gaps = true, true
			continue
		}
		switch f.Kind {
		case record.KindRequest:
			s.reqs[f.Method] = append(s.reqs[f.Method], i)
		case record.KindNotification:
			s.notes[f.Method] = append(s.notes[f.Method], i)
		case record.KindResponse, record.KindError:
			s.resps[wire.Key(f.ID)] = i
		default:
			s.junk = append(s.junk, i)
		}
		if f.Kind == record.KindRequest {
			byID[wire.Key(f.ID)] = append(byID[wire.Key(f.ID)], i)
		}
	}
	for j, f := range rec.Server {
		if f.Kind == record.KindResponse || f.Kind == record.KindError {
			if q := byID[wire.Key(f.ID)]; len(q) > 0 {
				s.respTo[j], byID[wire.Key(f.ID)] = q[0], q[1:]
			}
		}
	}
	return s
}

// extra reports a message from the host that the record has not, unless
// the record lost detail of what the host sent; s.mu held.
func (s *server) extra(d Departure) {
	if s.gaps {
		s.lost++
		return
	}
	s.depart(d)
}

// bumpLocked wakes the player; s.mu held.
func (s *server) bumpLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *server) depart(d Departure) {
	s.report.Departures = append(s.report.Departures, d)
}

// maxServeFrame is the least frame the played server accepts from the
// host; a record with longer host frames raises it to twice the longest.
const maxServeFrame = 16 << 20

// readerGrace bounds the wait for the stdin reader to end once stdin is
// closed, which on Unix ends it at once.
const readerGrace = 5 * time.Second

func (s *server) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	limit := maxServeFrame
	for _, f := range s.rec.Host {
		limit = max(limit, int(2*f.Size))
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		s.read(pipes.NewFramer(s.stdin, limit))
	}()
	// The writes block while the host does not read: ctx ends them by
	// closing the streams, which the caller gave the server to own.
	stopped := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-ctx.Done():
			s.stdout.Close()
			s.stdin.Close()
		case <-stopped:
		}
	}()

	err := s.play(ctx)
	s.mu.Lock()
	if err != nil && ctx.Err() == nil {
		s.report.Stopped = err
	}
	s.finish()
	s.report.Elapsed = time.Since(s.start)
	rep := s.report
	s.mu.Unlock()
	close(stopped)
	<-watchDone
	s.stdout.Close()
	s.stdin.Close() // ends the reader if the host has not closed stdin
	select {
	case <-readDone:
	case <-time.After(readerGrace):
		// Where closing a file does not end a read blocked on it
		// (Windows), the reader is left blocked: say so.
		return errors.Join(rep.Err(), fmt.Errorf("replay: Serve: the read of the host's stdin did not end within %v of closing it; it is left blocked", readerGrace))
	}
	return rep.Err() // with Stopped, if play failed
}

// read reads the host's frames until stdin ends, and matches each to the
// record.
func (s *server) read(fr *pipes.Framer) {
	for {
		frame, err := fr.Next()
		var tooLarge *pipes.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			s.mu.Lock()
			s.depart(Departure{Kind: Extra, Seq: -1, Dir: record.DirIn, Text: fmt.Sprintf("a frame of %d bytes, over the played server's limit of %d", tooLarge.Size, tooLarge.Limit)})
			s.bumpLocked()
			s.mu.Unlock()
			continue
		}
		if err != nil {
			s.mu.Lock()
			s.eof = true
			if !errors.Is(err, io.EOF) {
				s.readErr = err
			}
			s.bumpLocked()
			s.mu.Unlock()
			return
		}
		s.take(frame)
	}
}

// take matches one frame from the host.
func (s *server) take(frame []byte) {
	m, perr := wire.ParseMessage(frame)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.bumpLocked()
	var i int
	switch {
	case perr != nil:
		if len(s.junk) == 0 {
			s.extra(Departure{Kind: Extra, Seq: -1, Dir: record.DirIn, Text: fmt.Sprintf("a line that is not JSON-RPC: %.80q", frame)})
			return
		}
		i, s.junk = s.junk[0], s.junk[1:]
	case m.IsRequest():
		q := s.reqs[m.Method]
		if len(q) == 0 {
			s.extra(Departure{Kind: Extra, Seq: -1, Dir: record.DirIn, Method: m.Method, ID: m.ID, Text: "a request the record has not: answered with -32601"})
			s.replies = append(s.replies, errorLine(m.ID, wire.CodeMethodNotFound, "mcpstdio replay: the record has no "+strconv.Quote(m.Method)+" request here"))
			return
		}
		i, s.reqs[m.Method] = q[0], q[1:]
		want := &s.rec.Host[i]
		s.hostIDs[i] = m.ID
		s.recIDs[wire.Key(m.ID)] = want.ID
		if tok := wire.Member(wire.Member(m.Params, "_meta"), wire.MetaProgressToken); len(tok) > 0 && len(want.Token) > 0 {
			s.tokenMap[wire.Key(want.Token)] = tok
			frame = setAt(frame, want.Token, "params", "_meta", wire.MetaProgressToken)
		}
	case m.IsNotification():
		q := s.notes[m.Method]
		if len(q) == 0 {
			s.extra(Departure{Kind: Extra, Seq: -1, Dir: record.DirIn, Method: m.Method, Text: "a notification the record has not"})
			return
		}
		i, s.notes[m.Method] = q[0], q[1:]
		if m.Method == wire.MethodCancelled {
			if id, ok := s.recIDs[wire.Key(wire.Member(m.Params, "requestId"))]; ok {
				frame = setAt(frame, id, "params", "requestId")
			}
		}
	default:
		j, ok := s.resps[wire.Key(m.ID)]
		if !ok {
			s.extra(Departure{Kind: Extra, Seq: -1, Dir: record.DirIn, ID: m.ID, Text: "a response to no request of the played server"})
			return
		}
		delete(s.resps, wire.Key(m.ID))
		i = j
	}
	want := &s.rec.Host[i]
	s.got[i] = true
	diff, checked := s.rec.Compare(want, frame, s.optList()...)
	if !checked {
		s.depart(Departure{Kind: Unchecked, Seq: want.Seq, Dir: record.DirIn, Method: want.Method, ID: want.ID, Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): not compared", len(want.Head), want.Size)})
		return
	}
	s.report.Checked++
	if diff != "" {
		s.depart(Departure{Kind: Different, Seq: want.Seq, Dir: record.DirIn, Method: want.Method, ID: want.ID, Text: "the host sent a different message", Diff: diff})
	}
}

// optList gives Compare the options the server was made with.
func (s *server) optList() []Option {
	o := *s.o
	return []Option{optionFunc(func(t *options) error { *t = o; return nil })}
}

// errorLine encodes an error response.
func errorLine(id json.RawMessage, code int64, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return append(b, '\n')
}

// setAt returns b with the value at the path of object keys replaced by v,
// or b itself if there is no such value.
func setAt(b []byte, v json.RawMessage, keys ...string) []byte {
	off := 0
	obj := json.RawMessage(b)
	for _, k := range keys {
		s, e := wire.MemberAt(obj, k)
		if s < 0 {
			return b
		}
		off += s
		obj = obj[s:e]
	}
	out := make([]byte, 0, len(b)+len(v))
	out = append(append(append(out, b[:off]...), v...), b[off+len(obj):]...)
	return out
}

// action is one thing the played server does at a recorded time.
type action struct {
	t     time.Duration
	chunk *Chunk // a write of a chunk (DirOut or DirErr)
	frame int    // or of a frame of Server (a record without bodies); -1 for none
	close bool   // or the end of stdout
}

func (s *server) actions() []action {
	var as []action
	bodies := false
	for i := range s.rec.Chunks {
		c := &s.rec.Chunks[i]
		if c.Dir == record.DirIn {
			continue
		}
		if c.Parts != nil && c.Dir == record.DirOut {
			bodies = true
		}
		as = append(as, action{t: c.T, chunk: c, frame: -1})
	}
	if !bodies {
		// No chunk has its bytes: play the frames whole, each when its
		// first byte was read.
		as = as[:0]
		for i, f := range s.rec.Server {
			as = append(as, action{t: f.T0, frame: i})
		}
	}
	if s.rec.ServerEOF >= 0 && (s.rec.HostEOF < 0 || s.rec.ServerEOF < s.rec.HostEOF) {
		as = append(as, action{t: s.rec.ServerEOF, frame: -1, close: true})
	}
	sort.SliceStable(as, func(i, j int) bool { return as[i].t < as[j].t })
	return as
}

// play plays the record's server side.
func (s *server) play(ctx context.Context) error {
	var prevT time.Duration
	var due time.Time
	closed := false
	for _, a := range s.actions() {
		// What the recorded server had received before this, and the
		// request of each response in it (whatever the record's clocks
		// say, a response comes after its request).
		// In timed mode the recorded gap counts from the previous action
		// (or from now, if that ran late), the wait for the host within it.
		gap := s.pace.Gap(a.t - prevT)
		if gap > 0 {
			due = later(due, time.Now()).Add(gap)
		}
		if err := s.waitHost(ctx, a.t, s.requestsOf(a), s.pace.Bound(a.t-prevT)); err != nil {
			return err
		}
		if gap > 0 {
			if err := bound.Pass(ctx, time.Until(due)); err != nil { // timed mode's gaps are the point
				return err
			}
		}
		prevT = a.t
		var err error
		switch {
		case a.close:
			s.flushReplies()
			closed = true
			err = s.stdout.Close()
		case a.chunk != nil && a.chunk.Dir == record.DirErr:
			if b, _ := s.rec.ChunkBytes(a.chunk, nil); len(b) > 0 {
				_, err = s.stderr.Write(b)
			}
		case a.chunk != nil:
			err = s.writeOut(s.chunkBytes(a.chunk))
		default:
			err = s.writeOut(s.frameLine(a.frame, true))
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if a.chunk != nil && a.chunk.Dir == record.DirErr {
				continue // a host that does not take stderr does not stop the play
			}
			return fmt.Errorf("replay: the played server's write failed: %w", err)
		}
		s.mu.Lock()
		s.report.Played++
		s.mu.Unlock()
	}
	if closed {
		return nil
	}
	// The recorded server went on until the host closed its stdin.
	return s.waitFor(ctx, func() bool { return s.eof }, 0)
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
	// on them), and, while the recorded server was not reading its stdin,
	// only up to where it stopped.
	limit := int64(-1)
	for _, st := range s.rec.Stalls {
		if st.Dir == record.DirIn && st.Since <= t && (!st.Ended || t < st.Since+st.Dur) {
			limit = st.At
		}
	}
	need := func() []int {
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
	err := s.waitFor(ctx, func() bool { return len(need()) == 0 && (!hostEOF || s.eof) }, bound)
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
		s.flushReplies()
		s.mu.Lock()
		ok, ch, eof := cond(), s.changed, s.eof
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
	// A frame without its body ends in this chunk: answer in its place.
	for k, p := range c.Parts {
		if p.Frame < 0 || s.rec.Server[p.Frame].Body != nil {
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
	case f.Body == nil:
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
	if s.lost > 0 {
		s.report.Notes = append(s.report.Notes, fmt.Sprintf("%d host messages came where the record lost detail: not checked", s.lost))
	}
	if s.readErr != nil {
		s.report.Notes = append(s.report.Notes, "reading the host's stdin failed: "+s.readErr.Error())
	}
}
