package fakeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ErrExited is returned by Serve when a fault (Faults.ExitAfterBytes,
// Faults.NoFinalNewline) made the server stop on purpose.
var ErrExited = errors.New("fakeserver: exited on purpose (fault)")

// codeRequestCancelled is the error code of the response
// Faults.RespondAfterCancel writes for cancelled work: mcp-go v1.2.1 writes
// -32603 "context canceled" (the official Go SDK v1.8.0 writes code 0 with
// the same message).
const codeRequestCancelled = -32603

// Server is a small MCP server over stdio whose tools and faults are chosen
// by its Options. Create it with New, run it with Serve (once), and read what
// it saw with Report.
type Server struct {
	cfg   config
	tools []tool // the tools offered, in tools/list order

	mu          sync.Mutex // guards what follows
	rep         Report
	works       map[string]*work // running requests by id (JSON text)
	finished    map[string]bool  // ids whose work has ended
	idleStarted bool             // Faults.IdleNotifyBytes has begun
	served      bool
	logOff      bool

	dirty chan struct{} // report changed (capacity 1)

	wmu sync.Mutex // the write lock: one frame at a time on stdout
	out *outWriter

	base   context.Context // Serve's context: work contexts derive from it
	wg     sync.WaitGroup  // work goroutines and fault writers
	sem    chan struct{}   // concurrency slots, nil for no limit
	msgs   int             // messages read; only the read loop touches it
	remote remoteSource

	exitOnce sync.Once
	exitCh   chan struct{}
	exitErr  error

	logCh  chan string
	stderr io.Writer
}

// New returns a Server configured by opts. It does nothing until Serve.
func New(opts ...Option) *Server {
	s := &Server{
		cfg:      defaultConfig(),
		works:    map[string]*work{},
		finished: map[string]bool{},
		dirty:    make(chan struct{}, 1),
		exitCh:   make(chan struct{}),
		logCh:    make(chan string, 64),
	}
	for _, o := range opts {
		o.apply(&s.cfg)
	}
	if s.cfg.concurrency > 0 {
		s.sem = make(chan struct{}, s.cfg.concurrency)
	}
	for _, t := range toolTable {
		if s.cfg.tools[t.Name] {
			s.tools = append(s.tools, t)
		}
	}
	return s
}

// work is one request's work.
type work struct {
	id      string          // JSON text of the id
	rawID   json.RawMessage // the id as received
	method  string
	params  requestParams
	perr    error // params did not decode
	modern  bool  // the request carried the 2026-07-28 _meta
	version string
	ctx     context.Context
	cancel  context.CancelFunc
	plan    faultPlan
	reqIdx  int // index in s.rep.Requests

	// guarded by s.mu
	state         WorkState
	cancelled     bool  // a notifications/cancelled stopped it
	cancels       []int // indexes in s.rep.Cancels
	suppressed    bool
	cut           bool
	respBytes     int64
	childKilled   bool
	remoteAborted bool
}

type requestParams struct {
	Meta            map[string]json.RawMessage `json:"_meta"`
	Name            string                     `json:"name"`
	Arguments       json.RawMessage            `json:"arguments"`
	ProtocolVersion string                     `json:"protocolVersion"`
}

// Serve runs the server on stdin and stdout until stdin reaches EOF (see
// Faults.IgnoreEOF), ctx is cancelled, or a fault ends it. Diagnostics go to
// stderr, which may be nil.
//
// The read loop never waits on a stdout write: each request runs in its own
// goroutine with its own context, and frames are written under one write
// lock. A notifications/cancelled that arrives before the response write
// began cancels the work and suppresses the response; one that arrives after
// stops further work (a big response is closed early at the next chunk, still
// valid JSON) but cannot recall bytes already written.
//
// When stdin reaches EOF, all running work is cancelled as if by a cancel.
// Before Serve returns it closes stdin and stdout and has ended every
// goroutine, child process and HTTP server it started. A write blocked on a
// stdout nobody reads ends only when ctx is cancelled (Serve then closes
// stdout); that works when stdout supports concurrent Close, as *os.File
// from os.Pipe does. Likewise Serve ends its stdin read by closing stdin: a
// stdin whose Close does not interrupt a blocked Read (os.Stdin in blocking
// mode) keeps Serve waiting until that Read returns; ServeStdio
// makes the process's stdio interruptible.
//
// Serve returns nil on EOF or cancellation, ErrExited when a fault made it
// exit. A Server serves once; a second call returns an error.
func (s *Server) Serve(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	if stdin == nil || stdout == nil {
		return errors.New("fakeserver: Serve needs a stdin and a stdout")
	}
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return errors.New("fakeserver: Serve called twice on one Server")
	}
	s.served = true
	s.mu.Unlock()
	if stderr == nil {
		stderr = io.Discard
	}
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.base = ctx
	s.stderr = stderr
	s.out = &outWriter{s: s, w: stdout}

	var bg sync.WaitGroup
	reportStop := make(chan struct{})
	if s.cfg.reportFile != "" {
		bg.Add(1)
		go func() {
			defer bg.Done()
			defer s.catch("the report file writer")
			s.reportFileLoop(reportStop)
		}()
	}
	s.writeNoise()
	logStop, logDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logDone)
		defer s.catch("the stderr writer")
		s.logLoop(logStop)
	}()

	if s.cfg.faults.Banner != "" {
		s.wmu.Lock()
		s.out.write([]byte(s.cfg.faults.Banner + "\n"))
		s.wmu.Unlock()
	}

	readDone := make(chan error, 1)
	go func() {
		// A panic that escapes the read loop ends the session with an
		// error, not the process.
		err := errors.New("fakeserver: the stdin read loop panicked (see Report.Panics)")
		defer func() { readDone <- err }()
		defer s.catch("the stdin read loop")
		err = s.readLoop(stdin)
	}()

	var readErr error
	readEnded := false
	exit := ""
	select {
	case readErr = <-readDone:
		readEnded = true
	case <-ctx.Done():
		exit = "context cancelled"
	case <-s.exitCh:
	}
	if readEnded {
		eof := readErr == nil || errors.Is(readErr, io.EOF) || errors.Is(readErr, io.ErrUnexpectedEOF)
		if eof {
			s.update(func(r *Report) { r.EOF = true })
			exit = "stdin EOF"
			if readErr != nil && !errors.Is(readErr, io.EOF) {
				s.logf("stdin: %v", readErr)
			}
		} else {
			exit = "stdin: " + readErr.Error()
		}
		if s.cfg.faults.IgnoreEOF {
			select {
			case <-ctx.Done():
				exit = "context cancelled (stdin EOF ignored)"
			case <-s.exitCh:
			}
		}
	}
	select {
	case <-s.exitCh:
		exit = s.exitErr.Error()
	default:
	}

	// Shut down: cancel all work, stop reading, wait for every goroutine.
	cancel()
	stdin.Close()
	if !readEnded {
		<-readDone
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-outer.Done():
		// A write is blocked on a stdout nobody reads: closing it is the
		// only way to end it.
		s.out.close()
		<-done
	}
	s.remote.close()
	s.out.close()

	s.update(func(r *Report) { r.Exit, s.logOff = exit, true })
	close(logStop)
	<-logDone // its last stderr bytes are in the final report
	close(reportStop)
	bg.Wait()

	select {
	case <-s.exitCh:
		return s.exitErr
	default:
		return nil
	}
}

// exit ends Serve on purpose with err.
func (s *Server) exit(err error) {
	s.exitOnce.Do(func() {
		s.exitErr = err
		close(s.exitCh)
	})
}

// readLoop reads stdin until it ends. It never writes stdout itself.
func (s *Server) readLoop(stdin io.Reader) error {
	fr := pipes.NewFramer(stdin, max(s.cfg.maxFrame, 1))
	for {
		frame, err := fr.Next()
		var tl *pipes.FrameTooLargeError
		oversized := errors.As(err, &tl)
		s.update(func(r *Report) {
			r.StdinBytes = fr.Stats().Bytes
			if oversized {
				r.StdinOversized++
			} else if err == nil {
				r.StdinMessages++
			}
		})
		if oversized {
			s.logf("stdin: %v", err)
			continue
		}
		if err != nil {
			return err
		}
		s.msgs++
		s.dispatch(frame, s.planFor(s.msgs))
	}
}

// dispatch handles one frame read from stdin, on the read loop: it starts a
// request's work, cancels work, or counts a response. A panic is recovered
// here so that the loop reads on.
func (s *Server) dispatch(frame []byte, plan faultPlan) {
	defer s.catch("the stdin read loop, message " + strconv.Itoa(plan.n))
	m, perr := wire.ParseMessage(frame)
	if perr != nil {
		code, msg := int64(wire.CodeParseError), "Parse error"
		if json.Valid(frame) {
			code, msg = wire.CodeInvalidRequest, "Invalid Request"
		}
		s.update(func(r *Report) { r.StdinParseErrors++ })
		s.logf("stdin: message %d: %v", plan.n, perr)
		s.loose(errorFrame(json.RawMessage("null"), code, msg, nil), plan)
		return
	}
	switch {
	case m.IsRequest():
		s.startRequest(m, plan)
	case m.IsNotification():
		if m.Method == wire.MethodCancelled {
			s.cancelRequest(m.Params)
		}
		s.loose(nil, plan)
	default:
		s.update(func(r *Report) { r.ResponsesRead++ })
		s.loose(nil, plan)
	}
}

// startRequest registers a request's work and runs it: in a goroutine, or
// inline for the naive loop.
func (s *Server) startRequest(m *wire.Message, plan faultPlan) {
	now := time.Now()
	w := &work{id: wire.Key(m.ID), rawID: m.ID, method: m.Method, plan: plan, state: StateNotStarted}
	if len(m.Params) > 0 {
		w.perr = json.Unmarshal(m.Params, &w.params)
	}
	if v, ok := w.params.Meta[wire.MetaProtocolVersion]; ok && s.cfg.era != EraLegacy {
		w.modern = true
		if err := json.Unmarshal(v, &w.version); err != nil {
			w.version = string(v)
		}
	}
	rec := RequestRecord{ID: w.id, Method: m.Method, Arrived: now, State: StateNotStarted}
	if m.Method == wire.MethodToolsCall {
		rec.Tool = w.params.Name
	}
	dup := false
	s.update(func(r *Report) {
		if _, dup = s.works[w.id]; dup {
			rec.State, rec.Ended = StateDone, now
		} else {
			w.ctx, w.cancel = context.WithCancel(s.base)
			w.reqIdx = len(r.Requests)
			s.works[w.id] = w
		}
		r.Requests = append(r.Requests, rec)
	})
	if dup {
		s.loose(errorFrame(w.rawID, wire.CodeInvalidRequest, "duplicate id "+w.id+": a request with this id is still running", nil), plan)
		return
	}
	if s.cfg.faults.NaiveLoop {
		s.run(w)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.run(w)
	}()
}

// String names w's request for diagnostics: its id and method.
func (w *work) String() string { return "request " + w.id + " (" + w.method + ")" }

func (s *Server) run(w *work) {
	defer s.finish(w)
	defer s.catch(w.String()) // a panic while responding; handleRecovered catches the others
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
			defer func() { <-s.sem }()
		case <-w.ctx.Done():
			s.respond(w, s.cancelledFrame(w))
			return
		}
	}
	s.setState(w, StateRunning)
	s.respond(w, s.handleRecovered(w))
}

func (s *Server) setState(w *work, st WorkState) {
	s.update(func(r *Report) { w.state, r.Requests[w.reqIdx].State = st, st })
}

// finish records the end of w's work and settles the cancels that wait for
// it.
func (s *Server) finish(w *work) {
	now := time.Now()
	s.update(func(rep *Report) {
		delete(s.works, w.id)
		s.finished[w.id] = true
		w.state = StateDone
		r := &rep.Requests[w.reqIdx]
		r.Ended, r.State = now, StateDone
		r.ResponseBytes, r.Cut, r.Suppressed = w.respBytes, w.cut, w.suppressed
		for _, i := range w.cancels {
			c := &rep.Cancels[i]
			c.Stopped, c.StoppedAfter = true, now.Sub(c.Arrived)
			c.Suppressed = w.suppressed
			c.ChildKilled, c.RemoteAborted = w.childKilled, w.remoteAborted
		}
	})
	w.cancel()
}

// cancelRequest handles notifications/cancelled on the read loop: it never
// waits on stdout.
func (s *Server) cancelRequest(params json.RawMessage) {
	id := wire.Key(wire.Member(params, "requestId"))
	if id == "" {
		s.logf("notifications/cancelled without a requestId ignored: %s", params)
		return
	}
	rec := CancelRecord{ID: id, Arrived: time.Now()}
	json.Unmarshal(wire.Member(params, "reason"), &rec.Reason) // a reason that is not a string is left out
	s.update(func(r *Report) {
		w := s.works[id]
		switch {
		case w != nil:
			rec.State = w.state
			w.cancels = append(w.cancels, len(r.Cancels))
			if !s.cfg.faults.IgnoreCancel {
				w.cancelled = true
				w.cancel()
			}
		case s.finished[id]:
			rec.State, rec.Stopped = StateDone, true
		default:
			rec.State, rec.Stopped = StateUnknown, true
		}
		r.Cancels = append(r.Cancels, rec)
	})
}

// respond writes w's response frame unless w was cancelled before writing
// began.
func (s *Server) respond(w *work, f *frame) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.writePrelude(w.plan)
	suppress := false
	s.update(func(r *Report) {
		suppress = f == nil || (w.ctx.Err() != nil && !(s.cfg.faults.RespondAfterCancel && w.cancelled))
		if suppress {
			w.suppressed = true
			return
		}
		w.state, r.Requests[w.reqIdx].State = StateWriting, StateWriting
	})
	if suppress {
		s.afterFrame(w.plan)
		return
	}
	n, cut := s.writeFrame(w.ctx, f, w.plan)
	s.mu.Lock()
	w.respBytes, w.cut = n, cut
	s.mu.Unlock()
	s.afterFrame(w.plan)
	s.idleNotifications(w)
}

// loose writes a frame that belongs to no running work (an error for a bad
// message), or just the faults planned for a message that gets no response.
func (s *Server) loose(f *frame, plan faultPlan) {
	if f == nil && plan.empty() {
		return
	}
	do := func() {
		s.wmu.Lock()
		defer s.wmu.Unlock()
		s.writePrelude(plan)
		if f != nil {
			s.writeFrame(context.Background(), f, plan)
		}
		s.afterFrame(plan)
	}
	if s.cfg.faults.NaiveLoop {
		do()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.catch("the reply to message " + strconv.Itoa(plan.n))
		do()
	}()
}

// frame is one serialized message ready to write. Bytes buf[bodyStart:bodyEnd]
// may be cut short by a cancel: cut returns the first position at or after
// rel (relative to bodyStart) where the body can end so that buf[bodyEnd:]
// still closes it validly.
type frame struct {
	buf                []byte // without the newline
	bodyStart, bodyEnd int
	cut                func(rel int) int
	chunk              int // bytes per stdout Write; 0 writes the frame at once
}

// rawNewlinePrefix is where Faults.RawNewline breaks a frame: after `{"jsonrpc":"2.0",`.
var rawNewlinePrefix = []byte(`{"jsonrpc":"2.0",`)

// writeFrame writes f and its newline in chunks, with the faults of plan.
// s.wmu must be held. If ctx is cancelled while the body is being written,
// the body is cut at the next valid point and the frame closed. It returns
// the bytes written and whether the frame was cut.
func (s *Server) writeFrame(ctx context.Context, f *frame, plan faultPlan) (int64, bool) {
	buf, bs, be := f.buf, f.bodyStart, f.bodyEnd
	if plan.rawNewline && bytes.HasPrefix(buf, rawNewlinePrefix) {
		at := len(rawNewlinePrefix)
		nb := make([]byte, 0, len(buf)+2)
		nb = append(append(append(nb, buf[:at]...), '\n'), buf[at:]...)
		buf = nb
		if bs >= at {
			bs, be = bs+1, be+1
		}
	}
	if !plan.noNewline {
		buf = append(buf[:len(buf):len(buf)], '\n')
	}
	chunk := f.chunk
	if chunk <= 0 {
		chunk = len(buf)
	}
	var n int64
	pos, cut := 0, false
	for pos < len(buf) {
		if !cut && f.cut != nil && pos < be && ctx.Err() != nil {
			end := bs
			if pos > bs {
				end = bs + f.cut(pos-bs)
			}
			rest := append(append([]byte(nil), buf[pos:end]...), buf[be:]...)
			buf, pos, cut = rest, 0, true
			continue
		}
		end := min(pos+chunk, len(buf))
		k, err := s.out.write(buf[pos:end])
		n += int64(k)
		if err != nil {
			return n, cut
		}
		pos = end
	}
	return n, cut
}

// outWriter counts and times stdout writes. write is called with s.wmu held;
// close may be called at any time to unblock it.
type outWriter struct {
	s  *Server
	w  io.WriteCloser
	mu sync.Mutex // guards closed, written
	// closed is set once stdout is closed on purpose.
	closed  bool
	written int64
}

var errStdoutClosed = errors.New("fakeserver: stdout closed")

func (o *outWriter) write(p []byte) (int, error) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		o.s.countWrite(0, 0, errStdoutClosed)
		return 0, errStdoutClosed
	}
	limit := o.s.cfg.faults.ExitAfterBytes
	exitNow := false
	if limit > 0 && o.written+int64(len(p)) >= limit {
		p = p[:limit-o.written]
		exitNow = true
	}
	o.mu.Unlock()
	start := time.Now()
	n, err := o.w.Write(p)
	d := time.Since(start)
	o.mu.Lock()
	o.written += int64(n)
	o.mu.Unlock()
	o.s.countWrite(int64(n), d, err)
	if exitNow {
		o.close()
		o.s.exit(fmt.Errorf("%w: ExitAfterBytes %d reached", ErrExited, limit))
		if err == nil {
			err = ErrExited
		}
	}
	return n, err
}

func (o *outWriter) close() {
	o.mu.Lock()
	already := o.closed
	o.closed = true
	o.mu.Unlock()
	if !already {
		o.w.Close()
	}
}

func (s *Server) countWrite(n int64, d time.Duration, err error) {
	s.update(func(r *Report) {
		r.StdoutWrites++
		r.StdoutBytes += n
		r.StdoutBlocked += d
		r.StdoutLongestBlock = max(r.StdoutLongestBlock, d)
		if err != nil {
			r.StdoutWriteErrors++
		}
	})
}

// logf sends a diagnostic line to stderr through a bounded queue, so that a
// host that does not drain stderr never blocks the read loop; lines that do
// not fit are dropped.
func (s *Server) logf(format string, args ...any) {
	line := "fakeserver: " + fmt.Sprintf(format, args...) + "\n"
	s.mu.Lock()
	off := s.logOff
	s.mu.Unlock()
	if off {
		return
	}
	select {
	case s.logCh <- line:
	default:
	}
}

func (s *Server) logLoop(stop <-chan struct{}) {
	for {
		select {
		case line := <-s.logCh:
			s.writeStderr([]byte(line))
		case <-stop:
			for {
				select {
				case line := <-s.logCh:
					s.writeStderr([]byte(line))
				default:
					return
				}
			}
		}
	}
}

func (s *Server) writeStderr(b []byte) {
	n, _ := s.stderr.Write(b)
	s.update(func(r *Report) { r.StderrBytes += int64(n) })
}

// writeNoise writes exactly cfg.stderrNoise bytes of numbered lines to stderr.
func (s *Server) writeNoise() {
	// Whole lines, batched into writes of up to 64 KiB: noisy servers
	// write lines, but a write per line would make this the slow part.
	left := s.cfg.faults.StderrNoise
	var buf []byte
	for i := 1; left > 0; {
		buf = buf[:0]
		for len(buf) < 64<<10 && int64(len(buf)) < left {
			buf = fmt.Appendf(buf, "fakeserver: stderr noise line %08d %s\n", i, "................................................")
			i++
		}
		if int64(len(buf)) > left {
			buf = buf[:left]
		}
		left -= int64(len(buf))
		s.writeStderr(buf)
	}
}

// envelope is a JSON-RPC response; jsonrpc comes first on the wire.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *wire.RPCError  `json:"error,omitempty"`
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakeserver: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func errorFrame(id json.RawMessage, code int64, msg string, data any) *frame {
	e := &wire.RPCError{Code: code, Message: msg}
	if data != nil {
		e.Data = marshal(data)
	}
	b := marshal(envelope{JSONRPC: "2.0", ID: id, Error: e})
	return &frame{buf: b, bodyStart: len(b), bodyEnd: len(b)}
}

func resultFrame(w *work, result map[string]any) *frame {
	if w.modern {
		result["resultType"] = "complete"
	}
	b := marshal(envelope{JSONRPC: "2.0", ID: w.rawID, Result: result})
	return &frame{buf: b, bodyStart: len(b), bodyEnd: len(b)}
}

// cancelledFrame is the response for work cancelled before it produced one:
// nil (no response), unless Faults.RespondAfterCancel.
func (s *Server) cancelledFrame(w *work) *frame {
	if !s.cfg.faults.RespondAfterCancel {
		return nil
	}
	return errorFrame(w.rawID, codeRequestCancelled, "context canceled", nil)
}
