package mcptest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
)

// WaitError is the error of a bounded wait that failed: what was waited
// for, why it ended, and a diagnosis of the session at that moment
// (Session.Diagnose), which says which side looks stuck and shows the
// evidence. The waits of a Session return one when their bound runs out
// or ctx ends.
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

// stdinWindow is how long stdinMotion watches the stdin pipe.
const stdinWindow = 50 * time.Millisecond

// stdinMotion says whether the server is reading its stdin, from two looks
// at the stdin pipe stdinWindow apart (a window that is the measurement;
// the session closing cuts it short): a write that timed out may face a server
// that stopped reading or one that reads slowly, and the fill level alone
// cannot tell them apart.
func (s *Session) stdinMotion() string {
	b0, c, err := pipeFill(s.stdin.W)
	if err != nil {
		return fmt.Sprintf("the write did not complete within the bound (stdin pipe fill unknown: %v)", err)
	}
	if bound.Pass(s.ctx, stdinWindow) != nil {
		return fmt.Sprintf("the write did not complete within the bound, and the session closed before the server's reading could be looked at (stdin pipe %d/%d bytes buffered%s)", b0, c, fullWord(b0, c))
	}
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

// Diagnose describes the state of the session as text: a first line, after
// "verdict:", saying which side looks stuck, then the evidence — pipe fill
// levels, whether host reads are stalled and since when, the last frame, the
// server's liveness and (Linux) what its threads wait in, who holds stdout
// open after the server exited, pending requests, what the host's bounds
// dropped, the transcript tail, junk, the stderr tail and, for an in-process
// server, its goroutines. Linux gives the most evidence (pipe capacity and
// fill level, /proc thread states, pipe holders). It does not block on the
// server and may be called at any time, after Close too.
func (s *Session) Diagnose() string {
	d := s.look()
	var b strings.Builder
	b.WriteString("verdict: " + d.verdict() + "\n")
	s.writePipes(&b, d)
	s.writeCounts(&b, d)
	s.writeTails(&b, d)
	return b.String()
}

// look is one look at the session for Diagnose: its counters, its pipes,
// what it keeps and (Linux) the server's threads.
type look struct {
	now               time.Time
	st                Stats
	alive, stalled    bool
	since             time.Time // host reads stalled since
	ob, oc, ib, ic    int       // stdout and stdin pipes: buffered, capacity
	oerr, ierr        error     // why a fill level is unknown
	ids               []string  // pending requests, sorted
	lastFrame         time.Time
	ended, stdoutErr  error
	closed            bool
	version, heldOpen string
	waiting, panics   int
	waitingBytes      int64
	keptN, junk       int
	keptBytes         int64
	lastJunk          []string
	threads           []threadState
	outFull, inFull   bool
	writing           bool // a server thread is blocked writing stdout
}

func (s *Session) look() *look {
	d := &look{now: time.Now(), st: s.Stats(), alive: s.alive(), stalled: s.valve.Stalled(), since: s.valve.StalledSince()}
	d.ob, d.oerr = s.stdout.Buffered()
	d.oc = s.stdout.Capacity()
	d.ib, d.ic, d.ierr = pipeFill(s.stdin.W)

	s.mu.Lock()
	for id, p := range s.pending {
		what := fmt.Sprintf("%s id=%d", p.method, id)
		if p.cancelled.Load() {
			what += " (cancelled or given up: a late answer is still accepted)"
		}
		d.ids = append(d.ids, what)
	}
	d.lastFrame, d.ended, d.closed, d.stdoutErr, d.version, d.heldOpen = s.lastFrame, s.ended, s.closed, s.stdoutErr, s.version, s.heldOpen
	d.waiting, d.waitingBytes, d.panics = len(s.srq), s.srqBytes, len(s.panics)
	d.keptN, d.keptBytes = s.notifications.n, s.notifications.bytes
	d.junk = s.junk.n
	for i := max(0, d.junk-3); i < d.junk; i++ {
		d.lastJunk = append(d.lastJunk, fmt.Sprintf("%q", *s.junk.at(i)))
	}
	s.mu.Unlock()
	slices.Sort(d.ids)

	d.outFull = d.oerr == nil && pipes.EffectivelyFull(d.ob, d.oc)
	d.inFull = d.ierr == nil && pipes.EffectivelyFull(d.ib, d.ic)
	if pid := s.proc.pid(); pid > 0 && d.alive {
		d.threads, _ = threadStates(pid, s.stdout.R)
	}
	for _, t := range d.threads {
		d.writing = d.writing || t.write
	}
	return d
}

// verdict says which side looks stuck, the first line of a diagnosis.
func (d *look) verdict() string {
	stalledFor := d.now.Sub(d.since).Round(time.Millisecond)
	switch {
	case d.heldOpen != "":
		return fmt.Sprintf("the server has ended (%s) but its stdout is still held open by another process%s", d.st.Exit, d.heldOpen)
	case !d.alive:
		return fmt.Sprintf("the server has ended (%s)", d.st.Exit)
	case d.closed:
		return fmt.Sprintf("the session is closed: %v", d.ended)
	case d.stalled && (d.outFull || d.writing):
		return fmt.Sprintf("the server is blocked writing stdout: host reads stalled for %v and the stdout pipe is full", stalledFor)
	case d.stalled:
		return fmt.Sprintf("host reads are stalled (for %v); the stdout pipe is not full", stalledFor)
	case d.inFull:
		return "the server is not reading its stdin (stdin pipe full)"
	case d.writing:
		return "a server thread is blocked writing stdout although the host reads"
	case d.ended != nil:
		return fmt.Sprintf("the session has ended: %v", d.ended)
	}
	return "the host is reading and the server is alive but has not answered"
}

// writePipes writes the server's liveness and the state of its pipes.
func (s *Session) writePipes(b *strings.Builder, d *look) {
	fmt.Fprintf(b, "server: %s, %s, protocol %q\n", s.target, map[bool]string{true: "alive", false: "ended"}[d.alive], d.version)
	if pid := s.proc.pid(); pid > 0 {
		fmt.Fprintf(b, "pid: %d\n", pid)
	}
	if d.oerr == nil {
		fmt.Fprintf(b, "stdout pipe: %d/%d bytes buffered%s\n", d.ob, d.oc, fullWord(d.ob, d.oc))
	} else {
		fmt.Fprintf(b, "stdout pipe: fill unknown (%v)\n", d.oerr)
	}
	if d.stalled {
		fmt.Fprintf(b, "host reads: stalled since %v ago\n", d.now.Sub(d.since).Round(time.Millisecond))
	} else {
		b.WriteString("host reads: running\n")
	}
	if d.ierr == nil {
		fmt.Fprintf(b, "stdin pipe: %d/%d bytes buffered%s\n", d.ib, d.ic, fullWord(d.ib, d.ic))
	}
}

// writeCounts writes what went each way, what is kept and what is pending.
func (s *Session) writeCounts(b *strings.Builder, d *look) {
	st := d.st
	last := "never"
	if !d.lastFrame.IsZero() {
		last = d.now.Sub(d.lastFrame).Round(time.Millisecond).String() + " ago"
	}
	fmt.Fprintf(b, "stdout: %d bytes, %d frames (largest %d), last frame %s, %d oversized, %d junk, %d parse errors, %d batches; ended: %v\n",
		st.StdoutBytes, st.Frames, st.LargestFrame, last, st.OversizedFrames, st.JunkLines, st.ParseErrors, st.Batches, errOr(d.stdoutErr, "no"))
	fmt.Fprintf(b, "received: %d responses (%d late), %d unknown ids, %d notifications, %d server requests; host busy between reads %v in all\n",
		st.Responses, st.LateResponses, st.UnknownIDs, st.Notifications, st.ServerRequests, st.ReaderBusyTime.Round(time.Millisecond))
	fmt.Fprintf(b, "kept: %d notifications (%d bytes; %d dropped, %d cut to their head), %d junk heads (%d dropped), transcript (%d dropped)\n",
		d.keptN, d.keptBytes, st.NotificationsDropped, st.NotificationsCut, d.junk, st.JunkDropped, st.TranscriptDropped)
	if d.waiting > 0 || st.ServerRequestsDropped > 0 || d.panics > 0 {
		fmt.Fprintf(b, "server requests: %d (%d bytes) waiting for the handler, %d dropped unanswered, %d handler panics\n", d.waiting, d.waitingBytes, st.ServerRequestsDropped, d.panics)
	}
	fmt.Fprintf(b, "stdin: %d bytes sent; stderr: %d bytes\n", st.StdinBytes, st.StderrBytes)
	if n := s.stdinRestLen.Load(); n > 0 {
		fmt.Fprintf(b, "stdin: %d bytes of a partly written message wait to be sent before the next one\n", n)
	}
	ids := d.ids
	if len(ids) > 8 {
		ids = append(ids[:6:6], fmt.Sprintf("and %d more", len(ids)-6))
	}
	if len(ids) > 0 {
		fmt.Fprintf(b, "pending: %s\n", strings.Join(ids, ", "))
	}
}

// writeTails writes the evidence: the writer-blocked evidence, the
// server's threads, junk, the transcript tail, the stderr tail and an
// in-process server's goroutines.
func (s *Session) writeTails(b *strings.Builder, d *look) {
	if ev := d.st.WriterEvidence; !ev.At.IsZero() {
		fmt.Fprintf(b, "writer-blocked evidence (%v ago): %s\n", d.now.Sub(ev.At).Round(time.Millisecond), ev)
	}
	if len(d.threads) > 0 {
		b.WriteString("threads:\n")
		for _, t := range d.threads {
			fmt.Fprintf(b, "  %s\n", t)
		}
	}
	if len(d.lastJunk) > 0 {
		fmt.Fprintf(b, "junk on stdout (last %d): %s\n", len(d.lastJunk), strings.Join(d.lastJunk, ", "))
	}
	if tr := s.Transcript(); len(tr) > 0 {
		b.WriteString("transcript tail:\n")
		for _, line := range foldLines(tr, 10) {
			fmt.Fprintf(b, "  %s\n", line)
		}
	}
	if se := s.stderrCap.Bytes(); len(se) > 0 {
		tail := se[max(0, len(se)-2048):]
		fmt.Fprintf(b, "stderr tail (%d bytes in all):\n%s\n", d.st.StderrBytes, tail)
	}
	if stacks := s.proc.stacks(); stacks != "" && d.alive {
		fmt.Fprintf(b, "server goroutines:\n%s\n", stacks)
	}
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
