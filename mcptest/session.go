package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
)

// ErrClosed is what every operation on a closed Session fails with, and
// every request still pending when Close was called: the errors wrap it and
// say how the server ended.
var ErrClosed = errors.New("mcptest: session closed")

// Session is a running server and the host connected to it. Its methods are
// safe for concurrent use.
//
// One goroutine reads the server's stdout for the whole life of the server:
// the stall valve (StallReads), then the framer (the transport limit,
// WithMaxFrame), then dispatch, which routes each response to its Pending
// and keeps notifications, junk and the transcript within Limits. It never
// waits on the test: server-to-host requests are answered on a goroutine of
// their own (WithServerRequests), and stderr is drained on a third, so a
// server that logs much never blocks on it.
type Session struct {
	// Set by start, then read-only.
	cfg       config
	target    Target
	deadline  time.Time // from StartServer's test, or zero
	started   time.Time
	stdin     *pipes.Pipe
	stdout    *pipes.Pipe
	stderr    *pipes.Pipe
	valve     *pipes.Valve
	framer    *pipes.Framer
	in        *stdoutSource // what the framer reads: valve, envelope scanner, busy meter
	stderrCap *pipes.Capture
	proc      process
	srq       chan serverRequest // to the server-request goroutine

	ctx    context.Context // ends when the session closes; for server-request handlers
	cancel context.CancelFunc
	wg     sync.WaitGroup

	readerDone chan struct{} // closed when the stdout reader has ended
	stderrDone chan struct{} // closed when stderr has been drained to its end
	nextID     atomic.Int64

	// The stdin writer, guarded by writeMu.
	writeMu      sync.Mutex
	stdinRest    []byte       // the unwritten end of a message whose write timed out
	stdinRestLen atomic.Int64 // len(stdinRest), for Diagnose, which must not wait on writeMu

	// Everything else, guarded by mu.
	mu            sync.Mutex
	changed       chan struct{} // closed and replaced on every change waiters care about
	pending       map[int64]*Pending
	progress      map[string]int64 // progress notifications by token (wire.Key)
	notifications *ring[kept]
	junk          *ring[[]byte]
	transcript    *ring[entry]
	shareHeads    bool  // transcript entries may share a notification's bytes (store.go)
	srqBytes      int64 // bytes of server requests waiting for the handler
	panics        []string
	version       string
	modern        bool
	negotiated    bool
	ended         error // why the session can take no more requests; wraps ErrClosed once closed
	closed        bool  // Close has begun
	stdoutErr     error // how stdout ended
	lastFrame     time.Time
	stallWanted   bool
	monitoring    bool
	pipeFullAt    time.Time
	heldOpen      string // who holds stdout open after the server exited; "" if nobody does
	stdoutGone    bool   // CloseStdout closed the host's end of stdout
	stats         Stats
	evidence      WriterEvidence

	closeOnce sync.Once
	closeErr  error

	// handshaking is set while Start negotiates: bound then uses
	// the start timeout's bound if it is longer.
	handshaking atomic.Bool
}

// Start starts target, connects its stdin, stdout and stderr to new kernel
// pipes, starts the stdout reader, and negotiates the protocol unless
// WithoutHandshake is given. ctx bounds the start and the negotiation, not
// the session: the session lives until Close, which the caller must call.
// An invalid option makes Start fail with an error that names it; a failed
// negotiation, with the session's diagnosis, after closing it.
//
// Negotiation follows the stdio backward-compatibility rule of protocol
// 2026-07-28: a server/discover probe with the modern _meta; a result, or an
// UnsupportedProtocolVersionError that lists a modern version this host
// knows, means the modern era, where every request carries the _meta fields;
// any other error, or no answer within the probe timeout (WithProbeTimeout),
// means an earlier era: initialize offering 2025-11-25, accepting the version
// the server answers, then notifications/initialized. A server that lists
// only earlier versions is offered 2025-11-25 if it lists it, else its
// latest; one whose versions are all modern and unknown to this host fails
// Start. WithProtocolVersion(v) skips the probe: a modern v is used without
// any exchange, an older v is offered in initialize. A probe or initialize
// given up on when the handshake's bound ends is cancelled
// (notifications/cancelled). The probe and its outcome are noted in the
// transcript.
func Start(ctx context.Context, target Target, opts ...Option) (*Session, error) {
	return start(ctx, target, time.Time{}, opts)
}

// StartServer is Start for tests: it bounds the start by the test's
// deadline, which also bounds every later wait of the session, registers
// Close with t.Cleanup (failing the test if Close reports a problem), and
// calls t.Fatal with a diagnosis if the server fails to start or to
// negotiate.
func StartServer(t testing.TB, target Target, opts ...Option) *Session {
	t.Helper()
	ctx, cancel, dl := bound.Context(context.Background(), t)
	defer cancel()
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
	if target == nil {
		return nil, errors.New("mcptest: Start: nil Target")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	l := cfg.limits
	s := &Session{
		cfg:           cfg,
		target:        target,
		deadline:      deadline,
		started:       time.Now(),
		pending:       map[int64]*Pending{},
		progress:      map[string]int64{},
		notifications: newRing[kept](l.Notifications, l.NotificationBytes),
		junk:          newRing[[]byte](l.Junk, 0),
		transcript:    newRing[entry](l.Transcript, 0),
		shareHeads:    l.Transcript <= l.Notifications,
		srq:           make(chan serverRequest, l.ServerRequests),
		stderrCap:     pipes.NewCapture(stderrKeep),
		readerDone:    make(chan struct{}),
		stderrDone:    make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	var ps []*pipes.Pipe
	for range 3 {
		p, err := pipes.New()
		if err != nil {
			for _, p := range ps {
				p.Close()
			}
			s.cancel()
			return nil, err
		}
		ps = append(ps, p)
	}
	s.stdin, s.stdout, s.stderr = ps[0], ps[1], ps[2]
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
	s.in = newStdoutSource(s.valve, cfg.maxFrame, s.responseBegins)
	s.framer = pipes.NewFramer(s.in, cfg.maxFrame)

	s.proc, err = target.start(s)
	if err != nil {
		return fail(err)
	}
	s.wg.Add(4)
	go s.readLoop()
	go s.serveServerRequests()
	go s.drainStderr()
	go s.watchExit()
	if cfg.noHandshake {
		return s, nil
	}
	s.handshaking.Store(true)
	err = s.handshake(ctx)
	s.handshaking.Store(false)
	if err != nil {
		d := s.Diagnose()
		cerr := s.Close()
		return nil, errors.Join(fmt.Errorf("%w\n%s", err, d), cerr)
	}
	return s, nil
}

// bumpLocked wakes everything waiting for a change of state; s.mu held.
func (s *Session) bumpLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

func (s *Session) bump() {
	s.mu.Lock()
	s.bumpLocked()
	s.mu.Unlock()
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
	return context.WithDeadline(ctx, s.waitDeadline(nil))
}

// waitDeadline is when a wait bounded by ctx (nil for none), the session's
// timeout (the start timeout's while Start negotiates, if longer) and the test
// deadline ends: for the hot paths (a request's write and its wait), which
// then need no context of their own.
func (s *Session) waitDeadline(ctx context.Context) time.Time {
	timeout := s.cfg.timeout
	if s.handshaking.Load() {
		timeout = max(timeout, s.cfg.startTimeout)
	}
	d := time.Now().Add(timeout)
	if !s.deadline.IsZero() && s.deadline.Before(d) {
		d = s.deadline
	}
	if ctx != nil {
		if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
			d = cd
		}
	}
	return d
}

// closedErr returns the error for an operation on a closed session, or nil
// if Close has not begun; s.mu held.
func (s *Session) closedErrLocked(op string) error {
	if !s.closed {
		return nil
	}
	return fmt.Errorf("mcptest: %s: %w", op, s.ended)
}

// endLocked ends the session for new and pending requests with err, unless
// it has already ended; s.mu held.
func (s *Session) endLocked(err error) {
	if s.ended == nil {
		s.ended = err
	}
	s.failPendingLocked(s.ended)
	s.bumpLocked()
}

// failPendingLocked fails every pending request with err; s.mu held.
func (s *Session) failPendingLocked(err error) {
	for id, p := range s.pending {
		delete(s.pending, id)
		p.complete(nil, fmt.Errorf("%s id=%d: %w", p.method, id, err))
	}
}

// watchExit notices a server that has exited while its stdout stays open
// (a process it started holds it): after the grace period, pending and
// later requests fail with an error that says so, naming the holders where
// the platform shows them, instead of waiting for answers that cannot come.
func (s *Session) watchExit() {
	defer s.wg.Done()
	select {
	case <-s.proc.done():
	case <-s.ctx.Done():
		return
	}
	t := time.NewTimer(s.cfg.grace)
	defer t.Stop()
	select {
	case <-s.readerDone:
		return
	case <-s.ctx.Done():
		return
	case <-t.C:
	}
	holders := holders(s.stdout.R)
	if holders == "" {
		holders = " (which one, this system cannot tell)"
	}
	ex := s.proc.exit()
	err := fmt.Errorf("mcptest: the server has ended (%s) but its stdout is still held open by another process%s, %v later", ex, holders, s.cfg.grace)
	s.mu.Lock()
	s.heldOpen = holders
	s.logLocked("%v", err)
	s.endLocked(err)
	s.mu.Unlock()
}

// holders describes the other processes that hold the pipe of which f is
// our end, as " (pid 123: sleep 1000)", or "" where the platform cannot
// tell (Linux reads /proc/*/fd).
func holders(f *os.File) string {
	hs := pipeHolders(f)
	if len(hs) == 0 {
		return ""
	}
	return " (held by " + strings.Join(hs, ", ") + ")"
}

// Close stops the server and the host, within a bound of about 7×grace
// (WithGrace). At once, every pending request fails with an error wrapping
// ErrClosed, as does every later operation. Then it resumes host reads
// (stdout is drained to the end), closes the server's stdin, waits the grace
// period, then sends SIGTERM, SIGQUIT (a Go server dumps its goroutines into
// the stderr capture) and SIGKILL to its process group, waiting the grace
// period after each; an in-process server's context is cancelled with its
// stdin closed, and its pipes closed if it does not return within the grace
// period. It then waits, at most the grace period, for stdout and stderr to
// end, together. What the server started in a session of its own
// (setsid), out of reach of the process group, is found on Linux by a
// marker in its environment and killed (Exit.Escaped); a process that still
// holds stdout or stderr open is named in the error, and left running if it
// was not found so. Every goroutine the session started is then waited
// for, at most twice the grace period.
//
// Close reports a server that would not end, a goroutine that would not
// stop (a WithServerRequests handler that ignores its context, a WithStderr
// writer that blocks), a held pipe and a panic in a server-request handler,
// instead of waiting forever. Stats.Exit says how the server ended. Close
// is safe to call more than once and from several goroutines; later calls
// return the first call's result.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Session) close() error {
	s.mu.Lock()
	s.closed = true
	s.stallWanted = false
	how := "while the server was running"
	switch {
	case s.ended != nil:
		how = "after the session had ended: " + s.ended.Error()
	case s.proc.exit().How != "":
		how = "after the server had ended: " + s.proc.exit().String()
	}
	s.ended = fmt.Errorf("%w (%s)", ErrClosed, how)
	s.failPendingLocked(s.ended)
	s.bumpLocked()
	s.mu.Unlock()
	s.logf("Close")
	s.valve.Resume()
	if isClosed(s.readerDone) {
		// The server closed its stdout before Close, most likely by
		// exiting: a process's descriptors close before it can be reaped.
		// Give the exit a moment, so that Stats.Exit says it ended on its
		// own rather than because its stdin closed.
		bound.Wait(s.proc.done(), min(s.cfg.grace, 500*time.Millisecond))
	}
	var errs []error
	// Closing the file directly, not under writeMu: a write blocked on a
	// full stdin returns at once instead of holding Close up.
	if err := s.proc.stop(s.cfg.grace, func() { s.stdin.W.Close() }); err != nil {
		errs = append(errs, err)
	}
	// The server has ended: its stdout and stderr end too, unless something
	// it started still holds them. Wait for both at once, then stop reading.
	expired := make(chan struct{})
	t := time.AfterFunc(s.cfg.grace, func() { close(expired) })
	for _, ch := range []chan struct{}{s.readerDone, s.stderrDone} {
		select {
		case <-ch:
		case <-expired:
		}
	}
	t.Stop()
	var held []string
	if !isClosed(s.readerDone) {
		held = append(held, "stdout"+holders(s.stdout.R))
		s.valve.Close()
		s.stdout.R.Close()
	}
	if !isClosed(s.stderrDone) {
		held = append(held, "stderr"+holders(s.stderr.R))
		s.stderr.R.Close()
	}
	escaped := s.proc.endEscaped()
	if len(held) > 0 {
		left := "left the process running"
		if len(escaped) > 0 {
			left = "killed what had left its process group: " + strings.Join(escaped, ", ")
		}
		err := fmt.Errorf("mcptest: the server has ended (%s) but its %s still open %v later: a process it started holds it; closed our end, %s",
			s.proc.exit(), strings.Join(held, " and "), s.cfg.grace, left)
		s.logf("%v", err)
		errs = append(errs, err)
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	if !bound.Wait(done, 2*s.cfg.grace) && s.proc.exit().How != ExitStuck { // a stuck server is named above
		errs = append(errs, fmt.Errorf("mcptest: session goroutines still running %v after the server ended (a WithServerRequests handler that ignores its context, or a WithStderr writer that blocks):\n%s", 2*s.cfg.grace, s.Diagnose()))
	}
	s.stdin.Close()
	s.stdout.Close()
	s.stderr.Close()
	s.mu.Lock()
	for _, p := range s.panics {
		errs = append(errs, errors.New(p))
	}
	s.failPendingLocked(s.ended) // requests a server-request reply raced in
	s.bumpLocked()
	s.mu.Unlock()
	return errors.Join(errs...)
}
