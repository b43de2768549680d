package mcptest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// Stats are a session's counters, the metrics the seed article asks a host
// to keep per server session. All sizes are bytes on the wire.
type Stats struct {
	StdoutBytes          int64         // bytes read from the server's stdout
	Frames               int64         // complete frames within the limit
	LargestFrame         int64         // longest complete frame within the limit
	OversizedFrames      int64         // frames over the transport limit, discarded unparsed
	DiscardedBytes       int64         // bytes of oversized and truncated frames
	ParseErrors          int64         // frames that look like JSON but are not JSON-RPC
	JunkLines            int64         // frames that are not JSON at all (banners, logs)
	Responses            int64         // responses routed to their request
	LateResponses        int64         // responses that arrived after Cancel (included in Responses)
	UnknownIDs           int64         // responses to no pending request
	Notifications        int64         // notifications received
	NotificationsDropped int64         // oldest notifications dropped beyond the 1024 kept
	ServerRequests       int64         // requests from the server
	ProtocolViolations   int64         // server requests in the modern era
	Dropped              int64         // messages dropped because the dispatcher queue was full
	QueueFullTime        time.Duration // the article's "time waiting for dispatcher space": the reader never waits, so this is the time from a message not fitting until one fits again
	Requests             int64         // requests sent
	CancelsSent          int64         // notifications/cancelled sent
	StdinBytes           int64         // bytes written to the server's stdin
	StderrBytes          int64         // bytes the server wrote to stderr
	StderrTeeDropped     int64         // stderr bytes not given to the WithStderr writer because it was slow
	StdoutFullTime       time.Duration // time the stdout pipe spent effectively full while reads were stalled
	Terminations         int           // 1 once the server has ended
	Exit                 Exit          // how the server ended
	WriterEvidence       WriterEvidence
}

// Stats returns a snapshot of the session's counters.
func (s *Session) Stats() Stats {
	fs := s.framer.Stats()
	s.mu.Lock()
	st := s.stats
	st.WriterEvidence = s.evidence
	if !s.pipeFullAt.IsZero() {
		st.StdoutFullTime += time.Since(s.pipeFullAt)
	}
	if !s.queueFullAt.IsZero() {
		st.QueueFullTime += time.Since(s.queueFullAt)
	}
	s.mu.Unlock()
	st.StdoutBytes = s.valve.BytesRead()
	st.Frames = fs.Frames
	st.LargestFrame = fs.Largest
	st.OversizedFrames = fs.Oversized
	st.DiscardedBytes = fs.Discarded
	st.StderrBytes = s.stderrCap.Total()
	st.Exit = s.proc.exit()
	if isClosed(s.proc.done()) {
		st.Terminations = 1
	}
	return st
}

// Stderr returns what the server wrote to stderr, bounded: the first and the
// last 32 KiB, with a marker where bytes were dropped.
func (s *Session) Stderr() []byte { return []byte(s.stderrCap.String()) }

// Junk returns the last 64 frames from stdout that were not JSON-RPC
// (counted in Stats.JunkLines and Stats.ParseErrors), each cut to 512 bytes.
func (s *Session) Junk() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]byte, len(s.junk))
	for i, j := range s.junk {
		out[i] = bytes.Clone(j)
	}
	return out
}

// Transcript returns the last 64 frames both ways and notes, oldest first,
// each frame cut to 512 bytes.
func (s *Session) Transcript() []TranscriptEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TranscriptEntry, 0, len(s.transcript))
	out = append(out, s.transcript[s.tpos:]...)
	return append(out, s.transcript[:s.tpos]...)
}

// Alive reports whether the server is still running.
func (s *Session) Alive() bool { return !isClosed(s.proc.done()) }

// PID returns the server's process id, or 0 for an in-process server.
func (s *Session) PID() int { return s.proc.pid() }

// WaitError is the error of a bounded wait that failed: what was waited for,
// why it ended, and a diagnosis of the session at that moment.
type WaitError struct {
	Op        string // what was waited for
	Err       error  // why the wait ended, often context.DeadlineExceeded
	Diagnosis string // Session.Diagnose at the time of the failure
}

// Error returns the operation, the cause and the diagnosis.
func (e *WaitError) Error() string {
	return fmt.Sprintf("mcptest: %s: %v\n%s", e.Op, e.Err, e.Diagnosis)
}

// Unwrap returns the cause.
func (e *WaitError) Unwrap() error { return e.Err }

func (s *Session) waitError(op string, err error) error {
	return &WaitError{Op: op, Err: err, Diagnosis: s.Diagnose()}
}

func (s *Session) stdinFill() string {
	b, c, err := pipeFill(s.stdin.W)
	if err != nil {
		return fmt.Sprintf("stdin pipe fill unknown (%v)", err)
	}
	return fmt.Sprintf("stdin pipe %d/%d bytes buffered%s", b, c, fullWord(b, c))
}

func fullWord(b, c int) string {
	if pipes.EffectivelyFull(b, c) {
		return " (full)"
	}
	return ""
}

// Diagnose describes the state of the session: which side looks stuck and
// the evidence — pipe fill levels, whether host reads are stalled and since
// when, the last frame, the server's liveness and (Linux) its threads' wait
// channels, pending requests, the transcript tail, the stderr tail and, for an
// in-process server, its goroutines.
func (s *Session) Diagnose() string {
	var b strings.Builder
	now := time.Now()
	st := s.Stats()
	alive := s.Alive()
	stalled := s.valve.Stalled()
	since := s.valve.StalledSince()
	ob, oerr := s.stdout.Buffered()
	oc := s.stdout.Capacity()
	ib, ic, ierr := pipeFill(s.stdin.W)

	s.mu.Lock()
	var ids []string
	for id, p := range s.pending {
		what := fmt.Sprintf("%s id=%d", p.method, id)
		if p.cancelled.Load() {
			what += " (cancelled or given up: a late answer is still accepted)"
		}
		ids = append(ids, what)
	}
	lastFrame, failErr, stdoutErr, version := s.lastFrame, s.failErr, s.stdoutErr, s.version
	queued, queuedBytes := len(s.queue), s.queuedBytes
	s.mu.Unlock()
	slices.Sort(ids)

	outFull := oerr == nil && pipes.EffectivelyFull(ob, oc)
	inFull := ierr == nil && pipes.EffectivelyFull(ib, ic)
	var threads []ThreadState
	if pid := s.proc.pid(); pid > 0 && alive {
		threads, _ = threadStates(pid, s.stdout.R)
	}
	writing := false
	for _, t := range threads {
		writing = writing || t.Write
	}

	// The verdict first.
	switch {
	case !alive:
		fmt.Fprintf(&b, "verdict: the server has ended (%s)\n", st.Exit)
	case stalled && (outFull || writing):
		fmt.Fprintf(&b, "verdict: the server is blocked writing stdout: host reads stalled for %v and the stdout pipe is full\n", now.Sub(since).Round(time.Millisecond))
	case stalled:
		fmt.Fprintf(&b, "verdict: host reads are stalled (for %v); the stdout pipe is not full\n", now.Sub(since).Round(time.Millisecond))
	case inFull:
		b.WriteString("verdict: the server is not reading its stdin (stdin pipe full)\n")
	case writing:
		b.WriteString("verdict: a server thread is blocked writing stdout although the host reads\n")
	case failErr != nil:
		fmt.Fprintf(&b, "verdict: the session has ended: %v\n", failErr)
	default:
		b.WriteString("verdict: the host is reading and the server is alive but has not answered\n")
	}
	fmt.Fprintf(&b, "server: %s, %s, protocol %q\n", s.target, map[bool]string{true: "alive", false: "ended"}[alive], version)
	if pid := s.proc.pid(); pid > 0 {
		fmt.Fprintf(&b, "pid: %d\n", pid)
	}
	if oerr == nil {
		fmt.Fprintf(&b, "stdout pipe: %d/%d bytes buffered%s\n", ob, oc, fullWord(ob, oc))
	} else {
		fmt.Fprintf(&b, "stdout pipe: fill unknown (%v)\n", oerr)
	}
	if stalled {
		fmt.Fprintf(&b, "host reads: stalled since %v ago\n", now.Sub(since).Round(time.Millisecond))
	} else {
		b.WriteString("host reads: running\n")
	}
	if ierr == nil {
		fmt.Fprintf(&b, "stdin pipe: %d/%d bytes buffered%s\n", ib, ic, fullWord(ib, ic))
	}
	last := "never"
	if !lastFrame.IsZero() {
		last = now.Sub(lastFrame).Round(time.Millisecond).String() + " ago"
	}
	fmt.Fprintf(&b, "stdout: %d bytes, %d frames (largest %d), last frame %s, %d oversized, %d junk, %d parse errors; ended: %v\n",
		st.StdoutBytes, st.Frames, st.LargestFrame, last, st.OversizedFrames, st.JunkLines, st.ParseErrors, errOr(stdoutErr, "no"))
	fmt.Fprintf(&b, "dispatcher: %d/%d queued (%d bytes), %d dropped\n", queued, cap(s.queue), queuedBytes, st.Dropped)
	fmt.Fprintf(&b, "stdin: %d bytes sent; stderr: %d bytes\n", st.StdinBytes, st.StderrBytes)
	if n := s.stdinRestLen.Load(); n > 0 {
		fmt.Fprintf(&b, "stdin: %d bytes of a partly written message wait to be sent before the next one\n", n)
	}
	if len(ids) > 0 {
		fmt.Fprintf(&b, "pending: %s\n", strings.Join(ids, ", "))
	}
	if !st.WriterEvidence.At.IsZero() {
		fmt.Fprintf(&b, "writer-blocked evidence (%v ago): %s\n", now.Sub(st.WriterEvidence.At).Round(time.Millisecond), st.WriterEvidence)
	}
	if len(threads) > 0 {
		b.WriteString("threads:\n")
		for _, t := range threads {
			fmt.Fprintf(&b, "  %s\n", t)
		}
	}
	if tr := s.Transcript(); len(tr) > 0 {
		b.WriteString("transcript tail:\n")
		for _, e := range tr[max(0, len(tr)-10):] {
			line := e.String()
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			fmt.Fprintf(&b, "  %s\n", line)
		}
	}
	if se := s.stderrCap.Bytes(); len(se) > 0 {
		tail := se[max(0, len(se)-2048):]
		fmt.Fprintf(&b, "stderr tail (%d bytes in all):\n%s\n", st.StderrBytes, tail)
	}
	if stacks := s.proc.stacks(); stacks != "" && alive {
		fmt.Fprintf(&b, "server goroutines:\n%s\n", stacks)
	}
	return b.String()
}

func errOr(err error, s string) string {
	if err == nil {
		return s
	}
	return err.Error()
}

// Close stops the server and the host: it resumes host reads (stdout is
// drained to the end), closes the server's stdin, waits the grace period
// (WithGrace), then sends SIGTERM, SIGQUIT (a Go server dumps its goroutines
// into the stderr capture) and SIGKILL to its process group, waiting the
// grace period after each; an in-process server's context is cancelled and
// its pipes closed. Every goroutine the session started is then waited for,
// within bounds. Close reports a server that would not end, or a goroutine
// that would not stop, instead of waiting forever. Stats.Exit says how the
// server ended. Close is safe to call more than once; later calls return
// the first call's result.
func (s *Session) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Session) close() error {
	s.mu.Lock()
	s.closing = true
	s.stallWanted = false
	s.mu.Unlock()
	s.valve.Resume()
	if isClosed(s.readerDone) {
		// The server closed its stdout before Close, most likely by
		// exiting: a process's descriptors close before it can be reaped.
		// Give the exit a moment, so that Stats.Exit says it ended on its
		// own rather than because its stdin closed.
		waitChan(s.proc.done(), min(s.cfg.grace, 500*time.Millisecond))
	}
	var errs []error
	if err := s.proc.stop(s.cfg.grace, func() { s.stdin.W.Close() }); err != nil {
		errs = append(errs, err)
	}
	// The server has ended: its stdout ends too, unless something it
	// started still holds it open. Then stop reading.
	if !waitChan(s.readerDone, s.cfg.grace) {
		s.note("stdout still open %v after the server ended; closing it", s.cfg.grace)
		s.valve.Close()
		s.stdout.R.Close()
	}
	if !waitChan(s.stderrDone, s.cfg.grace) {
		s.stderr.R.Close()
	}
	s.cancel()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	if !waitChan(done, 2*s.cfg.grace) {
		errs = append(errs, fmt.Errorf("mcptest: session goroutines still running %v after the server ended:\n%s", 2*s.cfg.grace, s.Diagnose()))
	}
	s.stdin.Close()
	s.stdout.Close()
	s.stderr.Close()
	s.mu.Lock()
	s.failPendingLocked(ErrClosed)
	if s.failErr == nil {
		s.failErr = ErrClosed
	}
	s.bumpLocked()
	s.mu.Unlock()
	return errors.Join(errs...)
}
