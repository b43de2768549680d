package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ErrClosed is returned by calls on a closed Session and by requests still
// pending when it closed.
var ErrClosed = errors.New("mcptest: session closed")

// Session is a running server and the host connected to it. Its methods are
// safe for concurrent use.
//
// One goroutine reads the server's stdout for the whole life of the server:
// stall valve → framer (the transport limit) → a bounded queue → a separate
// dispatcher goroutine that routes responses to their Pending, keeps
// notifications and answers server requests. The reader never waits for the
// dispatcher: when the queue is full it applies the overflow policy and
// reads on.
type Session struct {
	cfg      config
	target   Target
	deadline time.Time // from StartServer's test, or zero
	started  time.Time

	stdin, stdout, stderr *pipes.Pipe
	valve                 *pipes.Valve
	scanner               *idScanner
	framer                *pipes.Framer
	queue                 chan inbound
	maxQueueBytes         int64
	stderrCap             *pipes.Capture
	proc                  process

	ctx    context.Context // ends when the session closes; for server-request handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	readerDone chan struct{}
	stderrDone chan struct{}

	writeMu sync.Mutex
	nextID  atomic.Int64

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every change waiters care about
	pending      map[int64]*Pending
	progress     map[string]int64 // progress notifications by token (its compact JSON)
	stdinRest    []byte           // the unwritten end of a message whose write timed out; writeMu
	stdinRestLen atomic.Int64     // len(stdinRest), for Diagnose, which must not wait on writeMu
	notes        []noteEntry
	junk         [][]byte
	transcript   []TranscriptEntry
	tpos         int
	version      string
	modern       bool
	negotiated   bool
	failErr      error // the session ended (overflow, stdout closed)
	stdoutErr    error // how stdout ended
	lastFrame    time.Time
	queuedBytes  int64
	queueFullAt  time.Time
	stallWanted  bool
	monitoring   bool
	pipeFullAt   time.Time
	closing      bool
	stats        Stats
	evidence     WriterEvidence
	closeOnce    sync.Once
	closeErr     error
}

type inbound struct {
	frame []byte
	at    time.Time
}

type noteEntry struct {
	msg   *wire.Message
	taken bool
}

// TranscriptEntry is one frame in the session's transcript, or a note about
// what the session did.
type TranscriptEntry struct {
	At   time.Time
	Dir  string // "→" host to server, "←" server to host, "!" a note (negotiation, errors)
	Size int64  // bytes on the wire, without the newline
	Head []byte // the first bytes of the frame, or the note
}

// String formats the entry as one line: time, direction, head and size.
func (e TranscriptEntry) String() string {
	if e.Dir == "!" {
		return fmt.Sprintf("%s ! %s", e.At.Format("15:04:05.000"), e.Head)
	}
	more := ""
	if int64(len(e.Head)) < e.Size {
		more = fmt.Sprintf("… (%d bytes)", e.Size)
	}
	return fmt.Sprintf("%s %s %s%s", e.At.Format("15:04:05.000"), e.Dir, e.Head, more)
}

// Start starts target, connects its stdin, stdout and stderr to new kernel
// pipes, starts the stdout reader, and negotiates the protocol (see
// Handshake) unless WithoutHandshake is given. ctx bounds the start and the
// negotiation, not the session: the session lives until Close, which the
// caller must call.
func Start(ctx context.Context, target Target, opts ...Option) (*Session, error) {
	return start(ctx, target, time.Time{}, opts)
}

// StartServer is Start for tests: it bounds the start by the test's deadline,
// registers Close with t.Cleanup (failing the test if Close reports a
// problem), and calls t.Fatal with a diagnosis if the server fails to start
// or to negotiate.
func StartServer(t testing.TB, target Target, opts ...Option) *Session {
	t.Helper()
	ctx := context.Background()
	var dl time.Time
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if d, ok := d.Deadline(); ok {
			// Leave room to report and clean up before the binary's own
			// timeout panics.
			dl = d.Add(-min(time.Until(d)/10, 5*time.Second))
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
	}
	s, err := start(ctx, target, dl, opts)
	if err != nil {
		t.Fatalf("mcptest.StartServer(%s): %v", target, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("mcptest: closing %s: %v", target, err)
		}
	})
	return s
}

func start(ctx context.Context, target Target, deadline time.Time, opts []Option) (*Session, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if cfg.maxFrame < 1 {
		return nil, fmt.Errorf("mcptest: WithMaxFrame(%d): the limit must be positive", cfg.maxFrame)
	}
	s := &Session{
		cfg:           cfg,
		target:        target,
		deadline:      deadline,
		started:       time.Now(),
		pending:       map[int64]*Pending{},
		progress:      map[string]int64{},
		queue:         make(chan inbound, cfg.queue),
		maxQueueBytes: max(64<<20, 2*int64(cfg.maxFrame)),
		stderrCap:     pipes.NewCapture(stderrKeep),
		readerDone:    make(chan struct{}),
		stderrDone:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var err error
	if s.stdin, err = pipes.New(); err != nil {
		return nil, err
	}
	if s.stdout, err = pipes.New(); err != nil {
		s.stdin.Close()
		return nil, err
	}
	if s.stderr, err = pipes.New(); err != nil {
		s.stdin.Close()
		s.stdout.Close()
		return nil, err
	}
	fail := func(err error) (*Session, error) {
		s.stdin.Close()
		s.stdout.Close()
		s.stderr.Close()
		s.cancel()
		return nil, err
	}
	if n := cfg.pipeCapacity; n > 0 {
		if _, err := s.stdin.SetCapacity(n); err != nil {
			return fail(fmt.Errorf("mcptest: WithPipeCapacity(%d): stdin: %w", n, err))
		}
		if _, err := s.stdout.SetCapacity(n); err != nil {
			return fail(fmt.Errorf("mcptest: WithPipeCapacity(%d): stdout: %w", n, err))
		}
	}
	s.valve = pipes.NewValve(s.stdout.R)
	s.scanner = newIDScanner(s.valve, cfg.maxFrame)
	s.framer = pipes.NewFramer(s.scanner, cfg.maxFrame)

	s.proc, err = target.start(s)
	if err != nil {
		return fail(err)
	}
	s.wg.Add(3)
	go s.readLoop()
	go s.dispatchLoop()
	go s.drainStderr()
	if cfg.noHandshake {
		return s, nil
	}
	if err := s.Handshake(ctx); err != nil {
		d := s.Diagnose()
		cerr := s.Close()
		return nil, errors.Join(fmt.Errorf("%w\n%s", err, d), cerr)
	}
	return s, nil
}

// bump wakes everything waiting for a change of state.
func (s *Session) bump() {
	s.mu.Lock()
	s.bumpLocked()
	s.mu.Unlock()
}

func (s *Session) bumpLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// changedLocked returns a channel closed at the next change; s.mu held.
func (s *Session) changedLocked() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// bound limits ctx by the session's timeout and the test deadline.
func (s *Session) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	d := time.Now().Add(s.cfg.timeout)
	if !s.deadline.IsZero() && s.deadline.Before(d) {
		d = s.deadline
	}
	return context.WithDeadline(ctx, d)
}

func (s *Session) note(format string, args ...any) {
	s.mu.Lock()
	s.recordLocked("!", -1, fmt.Appendf(nil, format, args...))
	s.mu.Unlock()
}

// recordLocked adds to the transcript ring; s.mu held.
func (s *Session) recordLocked(dir string, size int64, frame []byte) {
	if size < 0 {
		size = int64(len(frame))
	}
	e := TranscriptEntry{At: time.Now(), Dir: dir, Size: size, Head: bytes.Clone(frame[:min(len(frame), headKeep)])}
	if len(s.transcript) < transcriptKeep {
		s.transcript = append(s.transcript, e)
		return
	}
	s.transcript[s.tpos] = e
	s.tpos = (s.tpos + 1) % transcriptKeep
}

// readLoop is the stdout reader. It never runs user code and never waits for
// the dispatcher.
func (s *Session) readLoop() {
	defer s.wg.Done()
	// readerDone first: whoever sees the dispatcher's end of stdout (a
	// failed request) must also see readerDone closed.
	defer close(s.queue)
	defer close(s.readerDone)
	for {
		frame, err := s.framer.Next()
		if err == nil {
			s.enqueue(bytes.Clone(frame))
			continue
		}
		var tooLarge *pipes.FrameTooLargeError
		if errors.As(err, &tooLarge) {
			s.oversized(tooLarge, s.scanner.pop())
			continue
		}
		var trunc *pipes.TruncatedFrameError
		if errors.As(err, &trunc) && trunc.Oversized {
			s.oversized(err, s.scanner.current())
		}
		if errors.Is(err, pipes.ErrValveClosed) || errors.Is(err, os.ErrClosed) {
			err = ErrClosed
		}
		s.mu.Lock()
		s.stdoutErr = err
		if trunc != nil {
			s.recordLocked("!", -1, []byte(err.Error()))
		}
		s.bumpLocked()
		s.mu.Unlock()
		return
	}
}

func (s *Session) enqueue(frame []byte) {
	now := time.Now()
	s.mu.Lock()
	s.lastFrame = now
	s.recordLocked("←", -1, frame)
	n := int64(len(frame))
	if s.failErr != nil && s.cfg.overflow == OverflowEndSession {
		s.stats.Dropped++
		s.mu.Unlock()
		return
	}
	fits := s.queuedBytes == 0 || s.queuedBytes+n <= s.maxQueueBytes
	if fits {
		select {
		case s.queue <- inbound{frame: frame, at: now}:
			s.queuedBytes += n
			if !s.queueFullAt.IsZero() {
				s.stats.QueueFullTime += now.Sub(s.queueFullAt)
				s.queueFullAt = time.Time{}
			}
			s.mu.Unlock()
			return
		default:
		}
	}
	s.stats.Dropped++
	if s.queueFullAt.IsZero() {
		s.queueFullAt = now
	}
	if s.cfg.overflow == OverflowEndSession && s.failErr == nil {
		err := &OverflowError{Queued: len(s.queue), Capacity: cap(s.queue), QueuedBytes: s.queuedBytes, Frame: bytes.Clone(frame[:min(len(frame), 200)])}
		s.failErr = err
		s.recordLocked("!", -1, []byte(err.Error()))
		s.failPendingLocked(err)
	}
	s.mu.Unlock()
}

// OverflowError ends a session whose dispatcher queue was full when a
// message arrived (policy OverflowEndSession).
type OverflowError struct {
	Queued      int    // messages in the queue
	Capacity    int    // the queue's capacity (WithQueue)
	QueuedBytes int64  // bytes in the queue
	Frame       []byte // the first bytes of the message that did not fit
}

// Error says the queue was full and what was dropped.
func (e *OverflowError) Error() string {
	return fmt.Sprintf("mcptest: dispatcher queue full (%d/%d messages, %d bytes): message dropped and session ended (starts %q); stdout is still being read", e.Queued, e.Capacity, e.QueuedBytes, e.Frame)
}

// oversized handles a frame over the transport limit: it is never parsed;
// its request, if its id was found, fails at once.
func (s *Session) oversized(err error, id []byte) {
	s.mu.Lock()
	s.lastFrame = time.Now()
	s.recordLocked("!", -1, fmt.Appendf(nil, "oversized frame (id %s): %v", orNone(id), err))
	var p *Pending
	if n, ok := (&wire.Message{ID: id}).IntID(); ok {
		p = s.pending[n]
		delete(s.pending, n)
	}
	s.mu.Unlock()
	if p != nil {
		p.complete(nil, fmt.Errorf("mcptest: response to %s id=%d: %w", p.method, p.id, err))
	}
}

func orNone(id []byte) string {
	if len(id) == 0 {
		return "not found"
	}
	return string(id)
}

func (s *Session) dispatchLoop() {
	defer s.wg.Done()
	for in := range s.queue {
		s.mu.Lock()
		s.queuedBytes -= int64(len(in.frame))
		s.mu.Unlock()
		s.handle(in)
	}
	// stdout has ended and every message before the end was dispatched.
	s.mu.Lock()
	err := s.stdoutErr
	if err == nil || errors.Is(err, io.EOF) {
		err = errors.New("mcptest: server closed its stdout")
	} else if err != ErrClosed {
		err = fmt.Errorf("mcptest: reading server stdout: %w", err)
	}
	if s.failErr == nil {
		s.failErr = err
	}
	s.failPendingLocked(err)
	s.bumpLocked()
	s.mu.Unlock()
}

// failPendingLocked fails every pending request; s.mu held.
func (s *Session) failPendingLocked(err error) {
	for id, p := range s.pending {
		delete(s.pending, id)
		p.complete(nil, fmt.Errorf("%s id=%d: %w", p.method, id, err))
	}
}

func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

func (s *Session) handle(in inbound) {
	msg, err := wire.ParseMessage(in.frame)
	if err != nil {
		s.mu.Lock()
		if looksJSON(in.frame) {
			s.stats.ParseErrors++
		} else {
			s.stats.JunkLines++
		}
		if len(s.junk) >= junkKeep {
			s.junk = s.junk[1:]
		}
		s.junk = append(s.junk, bytes.Clone(in.frame[:min(len(in.frame), headKeep)]))
		s.bumpLocked()
		s.mu.Unlock()
		return
	}
	switch {
	case msg.IsResponse():
		s.route(msg)
	case msg.IsRequest():
		s.serverRequest(msg)
	default:
		key := ""
		if msg.Method == wire.MethodProgress {
			key = progressKey(msg.Params)
		}
		s.mu.Lock()
		if _, ours := s.progress[key]; ours && key != "" {
			s.progress[key]++ // only tokens the host gave out: the map stays bounded
		}
		s.stats.Notifications++
		if len(s.notes) >= notesKeep {
			s.notes = s.notes[1:]
			s.stats.NotificationsDropped++
		}
		s.notes = append(s.notes, noteEntry{msg: msg})
		s.bumpLocked()
		s.mu.Unlock()
	}
}

func (s *Session) route(msg *wire.Message) {
	id, ok := msg.IntID()
	s.mu.Lock()
	p := s.pending[id]
	if !ok || p == nil {
		s.stats.UnknownIDs++
		s.recordLocked("!", -1, fmt.Appendf(nil, "response with unknown id %s", msg.ID))
		s.bumpLocked()
		s.mu.Unlock()
		return
	}
	delete(s.pending, id)
	late := p.cancelled.Load()
	if late {
		s.stats.LateResponses++
	}
	s.stats.Responses++
	s.bumpLocked()
	s.mu.Unlock()
	p.complete(&Response{ID: id, Result: msg.Result, Error: msg.Error, Late: late}, nil)
}

func (s *Session) serverRequest(msg *wire.Message) {
	if s.echoed(msg) {
		return
	}
	s.mu.Lock()
	s.stats.ServerRequests++
	modern := s.modern
	if modern {
		s.stats.ProtocolViolations++
		s.recordLocked("!", -1, fmt.Appendf(nil, "protocol violation: server sent request %q in the %s era", msg.Method, s.version))
	}
	s.mu.Unlock()
	reply := &wire.Message{JSONRPC: "2.0", ID: msg.ID}
	switch {
	case modern:
		reply.Error = &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "servers must not send requests on stdio in protocol " + wire.LatestVersion}
	case s.cfg.serverRequests != nil:
		result, err := s.cfg.serverRequests(s.ctx, msg)
		setReply(reply, result, err)
	case msg.Method == wire.MethodPing:
		reply.Result = json.RawMessage("{}")
	default:
		reply.Error = &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "method not found: " + msg.Method}
	}
	ctx, cancel := s.bound(s.ctx)
	defer cancel()
	if err := s.writeMsg(ctx, reply); err != nil {
		s.note("answering server request %q: %v", msg.Method, err)
	}
}

// echoed reports whether msg is one of the host's own pending requests sent
// back, as a program that copies stdin to stdout (cat) does, and if so fails
// that request with an error that says so rather than answering the echo,
// which the program would echo again.
func (s *Session) echoed(msg *wire.Message) bool {
	id, ok := msg.IntID()
	if !ok {
		return false
	}
	s.mu.Lock()
	p := s.pending[id]
	// Only before the server has sent any response: a real server may send
	// its own request (a ping) whose id happens to match one of the host's,
	// and an echoing program never answers anything.
	if p == nil || p.method != msg.Method || s.stats.Responses > 0 || s.stats.UnknownIDs > 0 {
		s.mu.Unlock()
		return false
	}
	delete(s.pending, id)
	s.stats.ServerRequests++
	s.recordLocked("!", -1, fmt.Appendf(nil, "the server sent the host's own request back: %s id=%d", msg.Method, id))
	s.bumpLocked()
	s.mu.Unlock()
	p.complete(nil, fmt.Errorf("mcptest: %s id=%d: the server sent this very request back instead of answering it: it echoes its stdin, it is not an MCP server", msg.Method, id))
	return true
}

func setReply(reply *wire.Message, result any, err error) {
	if err != nil {
		var re *wire.RPCError
		if errors.As(err, &re) {
			reply.Error = re
		} else {
			reply.Error = &wire.RPCError{Code: wire.CodeInternalError, Message: err.Error()}
		}
		return
	}
	b, merr := json.Marshal(result)
	if merr != nil {
		reply.Error = &wire.RPCError{Code: wire.CodeInternalError, Message: "mcptest: encoding result: " + merr.Error()}
		return
	}
	if bytes.Equal(b, []byte("null")) {
		b = []byte("{}")
	}
	reply.Result = b
}

func (s *Session) drainStderr() {
	defer s.wg.Done()
	defer close(s.stderrDone)
	var tee chan []byte
	var teeDone chan struct{}
	if s.cfg.stderr != nil {
		tee = make(chan []byte, 256)
		teeDone = make(chan struct{})
		go func() {
			defer close(teeDone)
			for b := range tee {
				_, _ = s.cfg.stderr.Write(b)
			}
		}()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := s.stderr.R.Read(buf)
		if n > 0 {
			s.stderrCap.Write(buf[:n])
			if tee != nil {
				select {
				case tee <- bytes.Clone(buf[:n]):
				default:
					s.mu.Lock()
					s.stats.StderrTeeDropped += int64(n)
					s.mu.Unlock()
				}
			}
		}
		if err != nil {
			break
		}
	}
	if tee != nil {
		close(tee)
		// The tee's writer is the caller's; wait for it within the grace
		// period only, so a stuck writer cannot hang Close.
		if !waitChan(teeDone, s.cfg.grace) {
			s.note("stderr tee writer still blocked after %v; abandoned", s.cfg.grace)
		}
	}
}

// writeMsg sends one message to the server's stdin, bounded by ctx and the
// session timeout.
func (s *Session) writeMsg(ctx context.Context, m *wire.Message) error {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("mcptest: encoding %s: %w", m.Method, err)
	}
	what := m.Method
	if what == "" {
		what = "response"
	}
	return s.writeRaw(ctx, what, append(b, '\n'))
}

// writeRaw writes b to the server's stdin, bounded by ctx and the session
// timeout. A write that times out part-way leaves the server holding the
// start of a message; its rest is kept and written first by the next
// write, so that the stream stays framed and no later message is glued to
// a broken one.
func (s *Session) writeRaw(ctx context.Context, what string, b []byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	dl, _ := ctx.Deadline()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	_ = s.stdin.W.SetWriteDeadline(dl)
	if len(s.stdinRest) > 0 {
		n, err := s.stdin.W.Write(s.stdinRest)
		s.mu.Lock()
		s.stats.StdinBytes += int64(n)
		s.mu.Unlock()
		s.stdinRest = s.stdinRest[n:]
		s.stdinRestLen.Store(int64(len(s.stdinRest)))
		if err != nil {
			return s.stdinError(fmt.Sprintf("the %d bytes left of an earlier message, before %s", len(s.stdinRest)+n, what), n, err)
		}
	}
	n, err := s.stdin.W.Write(b)
	frame := bytes.TrimSuffix(b, []byte("\n"))
	s.mu.Lock()
	s.stats.StdinBytes += int64(n)
	s.recordLocked("→", int64(len(frame)), frame)
	s.mu.Unlock()
	if err == nil {
		return nil
	}
	if n > 0 && n < len(b) {
		s.stdinRest = bytes.Clone(b[n:])
		s.stdinRestLen.Store(int64(len(s.stdinRest)))
		return fmt.Errorf("%w (%w: the remaining %d bytes will be written before the next message, so the server still gets it whole)",
			s.stdinError(fmt.Sprintf("%s (%d bytes)", what, len(b)), n, err), errPartialWrite, len(b)-n)
	}
	return s.stdinError(fmt.Sprintf("%s (%d bytes)", what, len(b)), n, err)
}

// errPartialWrite marks a write that timed out part-way: the message will
// still reach the server whole, when the next write sends its rest.
var errPartialWrite = errors.New("the message was partly written")

// stdinError explains a failed write of what to stdin, of which n bytes got
// through.
func (s *Session) stdinError(what string, n int, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return s.waitError(fmt.Sprintf("writing %s to server stdin, %d bytes written", what, n),
			fmt.Errorf("the server stopped reading stdin: %s: %w", s.stdinFill(), context.DeadlineExceeded))
	case errors.Is(err, syscall.EPIPE):
		return s.waitError(fmt.Sprintf("writing %s to server stdin", what), fmt.Errorf("the server closed its stdin (exited?): %w", err))
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("mcptest: writing %s: %w", what, ErrClosed)
	}
	return fmt.Errorf("mcptest: writing %s to server stdin: %w", what, err)
}

// progressKey returns the canonical JSON of a progress notification's
// token, or "" if it has none.
func progressKey(params json.RawMessage) string {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		return ""
	}
	return tokenKey(p.Token)
}

// tokenKey returns a token's canonical JSON, so that encoders that escape
// differently ("a\u0026b" and "a&b") agree; "" if raw is not a token.
func tokenKey(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || v == nil {
		return ""
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return ""
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

// ProgressCount returns how many notifications/progress have arrived with
// the given progress token (as JSON: a string token is quoted), which must
// be the token of a request this session sent (see Pending.ProgressToken):
// progress for tokens the host never gave out is not counted by token. Every
// one is counted, however many arrive and however large; tokens compare as
// JSON values, so "a&b" and "a\u0026b" are the same token.
func (s *Session) ProgressCount(token json.RawMessage) int64 {
	key := tokenKey(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress[key]
}
