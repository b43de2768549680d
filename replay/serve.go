package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Serve returns a server that plays the server side of rec for a host under
// test, on the streams it is given (its signature is mcptest.ServeFunc;
// `mcpstdio replay -serve` runs it on stdio): the recorded stdout and stderr,
// cut into the recorded chunks, each written once the host has sent what the
// recorded server had received before writing it (causal), or also at the
// recorded time (Timed). Where the recorded server stopped reading its
// stdin, it stops at the same byte and checks, before its next action, that
// the host then blocks writing (Report.Stalls, StallNotBlocking).
//
// The host's messages are matched to the recorded host's by order (the
// n-th request of a method to the recorded n-th) and compared (see
// Record.Compare); a request the record has not is answered with error
// -32601 (Extra), a recorded host message that does not come within
// Patience is Missing. A response is sent with the id the host gave its
// request, and a progress notification with the host's progress token; a
// response the record has only the head of is answered with error -32603
// saying so (Unchecked). The server ends as the recorded one did, or
// when the host closes stdin, or ctx ends, and returns the Report's Err: nil
// when the host did as recorded.
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
//
// How it plays. The n-th request of a method is matched to the n-th recorded
// one, and so on for notifications and junk; a response to the server's
// request by its id (the server's requests keep their recorded ids). A
// response is sent with the id the host gave its request, and a progress
// notification with the host's progress token; the id and progress token are
// compared as mapped. What the server sent in answer to a Missing message is
// left out. A response the record has only the head of is answered with error
// -32603 saying so (Unchecked).
//
// It ends, if the recorded server closed its stdout before the host closed
// its stdin, once it has played everything; otherwise once the host closes
// stdin, or ctx ends. Where the recorded server stopped reading its stdin
// (the proxy's writes to it blocked), it stops reading at the same byte
// until the recorded server read again (serve_stall.go).
type server struct {
	rec    *Record
	o      *options
	pace   pace
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

	framer   *pipes.Framer // of stdin, through the gate
	gate     *gate         // stdin, stopped where the recorded server stopped reading
	pipe     *pipes.Pipe   // stdin's pipe, for its fill level; nil if not one
	noPipe   string        // why pipe is nil
	stalls   []Stall       // of stdin
	checks   []StallCheck  // what was done with each
	stall    int           // the next or current stall
	armed    bool          // the gate is set for stalls[stall]
	extended int64         // bytes let through beyond its point
	ends     map[int]int64 // a recorded host frame → the stdin byte past it in the replay
}

func newServer(rec *Record, o *options, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) *server {
	s := &server{
		rec: rec, o: o, pace: o.pace(),
		stdin: stdin, stdout: stdout, stderr: stderr, start: time.Now(),
		changed: make(chan struct{}),
		got:     make([]bool, len(rec.Host)),
		reqs:    map[string][]int{}, notes: map[string][]int{}, resps: map[string]int{},
		hostIDs: map[int]json.RawMessage{}, tokenMap: map[string]json.RawMessage{}, recIDs: map[string]json.RawMessage{},
		lines: map[int][]byte{}, respTo: map[int]int{}, ends: map[int]int64{},
		stalls: stallsOf(rec, record.DirIn),
	}
	for _, st := range s.stalls {
		s.checks = append(s.checks, StallCheck{Seq: st.Seq, Dir: st.Dir, At: st.At})
	}
	s.gate = newGate(stdin, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bumpLocked()
	})
	s.pipe, s.noPipe = stdinPipe(stdin)
	s.serveArm()
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
	s.framer = pipes.NewFramer(s.gate, limit)
	go func() {
		defer close(readDone)
		s.read(s.framer)
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
			s.gate.close()
			s.stdin.Close()
		case <-stopped:
		}
	}()

	err := s.play(ctx)
	if err != nil {
		s.endStalls(ctx, false, 0)
	}
	s.mu.Lock()
	if err != nil && ctx.Err() == nil {
		s.report.Stopped = err
	}
	s.finish()
	s.report.Elapsed = time.Since(s.start)
	rep := s.report
	s.mu.Unlock()
	if s.o.onReport != nil {
		s.o.onReport(&rep)
	}
	close(stopped)
	<-watchDone
	s.stdout.Close()
	s.gate.close()
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
		st := fr.Stats()
		s.take(frame, st.Bytes-st.Pending)
	}
}

// take matches one frame from the host, which ended before stdin byte
// end.
func (s *server) take(frame []byte, end int64) {
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
	s.ends[i] = end
	s.retarget()
	diff, checked := s.rec.compare(want, frame, s.o)
	if !checked {
		s.depart(Departure{Kind: Unchecked, Seq: want.Seq, Dir: record.DirIn, Method: want.Method, ID: want.ID, Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): not compared", len(want.Head), want.Size)})
		return
	}
	s.report.Checked++
	if diff != "" {
		s.depart(Departure{Kind: Different, Seq: want.Seq, Dir: record.DirIn, Method: want.Method, ID: want.ID, Text: "the host sent a different message", Diff: diff})
	}
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
