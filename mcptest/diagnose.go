package mcptest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// Lifecycle and diagnosis. A failed wait returns a *WaitError whose
// Diagnosis says which side looks stuck and shows the evidence: pipe fill
// levels, stalled reads, the last frame, whether the server is alive,
// (Linux) what its threads wait in, the transcript tail, junk, the stderr
// tail and, for in-process servers, their goroutines. A server that exits
// while a process it started holds its stdout open fails pending requests
// within the grace period, naming the holder (Linux). Close escalates from
// closing stdin to SIGTERM, SIGQUIT and SIGKILL, and reports what it could
// not end; after Close, every operation fails at once with an error
// wrapping ErrClosed. A panic in an in-process server or a server-request
// handler is recovered and reported with its stack. Linux gives the most
// evidence (pipe capacity and fill level, /proc thread states, pipe
// holders); elsewhere WithPipeCapacity fails with errors.ErrUnsupported and
// WaitWriterBlocked has no evidence to find.

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

// stdinMotion says whether the server is reading its stdin, from two looks
// at the stdin pipe 50ms apart: a write that timed out may face a server
// that stopped reading or one that reads slowly, and the fill level alone
// cannot tell them apart.
func (s *Session) stdinMotion() string {
	b0, c, err := pipeFill(s.stdin.W)
	if err != nil {
		return fmt.Sprintf("the write did not complete within the bound (stdin pipe fill unknown: %v)", err)
	}
	time.Sleep(50 * time.Millisecond) // a measurement window, in an error path
	b1, _, err := pipeFill(s.stdin.W)
	switch {
	case err != nil:
		return fmt.Sprintf("the write did not complete within the bound (stdin pipe %d/%d bytes buffered%s)", b0, c, fullWord(b0, c))
	case b1 < b0:
		return fmt.Sprintf("the server is reading stdin, slowly: it took %d bytes from the pipe in 50ms after the bound (stdin pipe %d/%d bytes buffered%s)", b0-b1, b1, c, fullWord(b1, c))
	}
	return fmt.Sprintf("the server stopped reading stdin: nothing taken from the pipe in 50ms after the bound (stdin pipe %d/%d bytes buffered%s)", b1, c, fullWord(b1, c))
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
// channels, pending requests, what the host's bounds dropped, the transcript
// tail, junk, the stderr tail and, for an in-process server, its goroutines.
func (s *Session) Diagnose() string {
	var b strings.Builder
	now := time.Now()
	st := s.Stats()
	alive := s.alive()
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
	lastFrame, ended, closed, stdoutErr, version, heldOpen := s.lastFrame, s.ended, s.closed, s.stdoutErr, s.version, s.heldOpen
	waiting, waitingBytes, panics := len(s.srq), s.srqBytes, len(s.panics)
	keptN, keptBytes := s.notifications.n, s.notifications.bytes
	junk := s.junk.n
	var lastJunk []string
	for i := max(0, junk-3); i < junk; i++ {
		lastJunk = append(lastJunk, fmt.Sprintf("%q", *s.junk.at(i)))
	}
	s.mu.Unlock()
	slices.Sort(ids)

	outFull := oerr == nil && pipes.EffectivelyFull(ob, oc)
	inFull := ierr == nil && pipes.EffectivelyFull(ib, ic)
	var threads []threadState
	if pid := s.proc.pid(); pid > 0 && alive {
		threads, _ = threadStates(pid, s.stdout.R)
	}
	writing := false
	for _, t := range threads {
		writing = writing || t.write
	}

	// The verdict first.
	switch {
	case heldOpen != "":
		fmt.Fprintf(&b, "verdict: the server has ended (%s) but its stdout is still held open by another process%s\n", st.Exit, heldOpen)
	case !alive:
		fmt.Fprintf(&b, "verdict: the server has ended (%s)\n", st.Exit)
	case closed:
		fmt.Fprintf(&b, "verdict: the session is closed: %v\n", ended)
	case stalled && (outFull || writing):
		fmt.Fprintf(&b, "verdict: the server is blocked writing stdout: host reads stalled for %v and the stdout pipe is full\n", now.Sub(since).Round(time.Millisecond))
	case stalled:
		fmt.Fprintf(&b, "verdict: host reads are stalled (for %v); the stdout pipe is not full\n", now.Sub(since).Round(time.Millisecond))
	case inFull:
		b.WriteString("verdict: the server is not reading its stdin (stdin pipe full)\n")
	case writing:
		b.WriteString("verdict: a server thread is blocked writing stdout although the host reads\n")
	case ended != nil:
		fmt.Fprintf(&b, "verdict: the session has ended: %v\n", ended)
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
	fmt.Fprintf(&b, "stdout: %d bytes, %d frames (largest %d), last frame %s, %d oversized, %d junk, %d parse errors, %d batches; ended: %v\n",
		st.StdoutBytes, st.Frames, st.LargestFrame, last, st.OversizedFrames, st.JunkLines, st.ParseErrors, st.Batches, errOr(stdoutErr, "no"))
	fmt.Fprintf(&b, "received: %d responses (%d late), %d unknown ids, %d notifications, %d server requests; host busy between reads %v in all\n",
		st.Responses, st.LateResponses, st.UnknownIDs, st.Notifications, st.ServerRequests, st.ReaderBusyTime.Round(time.Millisecond))
	fmt.Fprintf(&b, "kept: %d notifications (%d bytes; %d dropped, %d cut to their head), %d junk heads (%d dropped), transcript (%d dropped)\n",
		keptN, keptBytes, st.NotificationsDropped, st.NotificationsCut, junk, st.JunkDropped, st.TranscriptDropped)
	if waiting > 0 || st.ServerRequestsDropped > 0 || panics > 0 {
		fmt.Fprintf(&b, "server requests: %d (%d bytes) waiting for the handler, %d dropped unanswered, %d handler panics\n", waiting, waitingBytes, st.ServerRequestsDropped, panics)
	}
	fmt.Fprintf(&b, "stdin: %d bytes sent; stderr: %d bytes\n", st.StdinBytes, st.StderrBytes)
	if n := s.stdinRestLen.Load(); n > 0 {
		fmt.Fprintf(&b, "stdin: %d bytes of a partly written message wait to be sent before the next one\n", n)
	}
	if len(ids) > 8 {
		ids = append(ids[:6:6], fmt.Sprintf("and %d more", len(ids)-6))
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
	if len(lastJunk) > 0 {
		fmt.Fprintf(&b, "junk on stdout (last %d): %s\n", len(lastJunk), strings.Join(lastJunk, ", "))
	}
	if tr := s.Transcript(); len(tr) > 0 {
		b.WriteString("transcript tail:\n")
		for _, line := range foldLines(tr, 10) {
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

// foldLines formats the last entries of a transcript, at most n lines,
// folding a run of entries that differ only in their numbers (a progress
// flood) into its last one and a count, so that the tail shows what
// happened rather than the same line ten times.
func foldLines(tr []TranscriptEntry, n int) []string {
	digits := func(e TranscriptEntry) string {
		return e.Dir + strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return -1
			}
			return r
		}, string(e.Head))
	}
	var out []string
	for i := len(tr) - 1; i >= 0 && len(out) < n; {
		j := i
		for j > 0 && digits(tr[j-1]) == digits(tr[i]) {
			j--
		}
		line := tr[i].line()
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		if run := i - j + 1; run > 1 {
			line += fmt.Sprintf("  (× %d like it since %s)", run, tr[j].At.Format("15:04:05.000"))
		}
		out = append(out, line)
		i = j - 1
	}
	slices.Reverse(out)
	return out
}

func errOr(err error, s string) string {
	if err == nil {
		return s
	}
	return err.Error()
}
