package mcptest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// pollInterval is how often waits on kernel state (pipe fill levels, /proc)
// look again. Those states have no event to wait on; the waits are bounded.
const pollInterval = 2 * time.Millisecond

// StallReads makes the host stop reading the server's stdout at the read(2)
// level until ResumeReads, so the pipe fills and the server's writes block.
func (s *Session) StallReads() {
	// When it returns, no further byte leaves the kernel pipe.
	if s.isClosed() {
		return
	}
	s.valve.Stall()
	s.startMonitor()
	s.logf("host reads stalled at %d stdout bytes", s.valve.BytesRead())
}

// stallReadsAfter is hostctl.StallReadsAfter.
func (s *Session) stallReadsAfter(n int64) {
	if s.isClosed() {
		return
	}
	s.valve.StallAfter(n)
	s.startMonitor()
	s.logf("host reads stall after %d more stdout bytes (at %d)", n, s.valve.BytesRead())
}

// ResumeReads lets the host read the server's stdout again. On a closed
// session the stall calls do nothing (Close reads stdout to its end).
func (s *Session) ResumeReads() {
	if s.isClosed() {
		return
	}
	s.sampleFull()
	s.mu.Lock()
	s.stallWanted = false
	s.mu.Unlock()
	s.valve.Resume()
	s.logf("host reads resumed at %d stdout bytes", s.valve.BytesRead())
}

// startMonitor samples the stdout pipe while reads are stalled, to measure
// the time it spends effectively full (Stats.StdoutFullTime).
func (s *Session) startMonitor() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallWanted = true
	if s.monitoring || s.closed {
		return
	}
	s.monitoring = true
	s.wg.Add(1)
	go s.monitor()
}

// sampleFull looks at the stdout pipe once for Stats.StdoutFullTime.
func (s *Session) sampleFull() {
	full, _, _ := s.stdoutFull()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if full && s.pipeFullAt.IsZero() {
		s.pipeFullAt = now
	}
	if !full && !s.pipeFullAt.IsZero() {
		s.stats.StdoutFullTime += now.Sub(s.pipeFullAt)
		s.pipeFullAt = time.Time{}
	}
}

func (s *Session) monitor() {
	defer s.wg.Done()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		s.sampleFull()
		now := time.Now()
		s.mu.Lock()
		if !s.stallWanted || s.closed {
			if !s.pipeFullAt.IsZero() {
				s.stats.StdoutFullTime += now.Sub(s.pipeFullAt)
				s.pipeFullAt = time.Time{}
			}
			s.monitoring = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
	}
}

// A WriterEvidence with PipeFull alone is what in-process servers give, and
// servers that make stdout non-blocking and queue the rest in memory
// (Node). Threads come from /proc/<pid>/task/<tid>/syscall showing write or
// writev on a descriptor of the session's stdout pipe, with the wchan
// (pipe_write, anon_pipe_write) beside it.

// WriterEvidence is what showed that the server is blocked writing stdout.
type WriterEvidence struct {
	At       time.Time
	PipeFull bool     // the stdout pipe effectively full on consecutive looks, reads stalled
	Buffered int      // bytes in the stdout pipe, if known
	Capacity int      // the stdout pipe's capacity, if known
	Threads  []string // (Linux) threads blocked writing stdout: "tid: syscall N (write fd F), wchan W"
}

// String lists the evidence, or says "none".
func (e WriterEvidence) String() string {
	if e.At.IsZero() {
		return "none"
	}
	var parts []string
	if e.PipeFull {
		parts = append(parts, fmt.Sprintf("stdout pipe effectively full (%d/%d bytes) and not draining with host reads stalled", e.Buffered, e.Capacity))
	}
	for _, t := range e.Threads {
		parts = append(parts, "thread "+t)
	}
	return strings.Join(parts, "; ")
}

// threadState is a server thread as Linux /proc shows it.
type threadState struct {
	tid     int
	syscall int64  // the system call it is in; -1 if running in user space
	fd      int64  // its first argument (for write: the file descriptor), if in a call
	wchan   string // the kernel function it waits in, "0" or "" if none
	write   bool   // blocked writing stdout: write/writev on the session's stdout pipe (fd 1 if /proc/<pid>/fd is unreadable)
}

// String formats the thread as "tid: syscall N (name fd F), wchan W".
func (t threadState) String() string {
	call := "running"
	if t.syscall >= 0 {
		call = fmt.Sprintf("syscall %d (%s fd %d)", t.syscall, syscallName(t.syscall), t.fd)
	}
	return fmt.Sprintf("%d: %s, wchan %s", t.tid, call, t.wchan)
}

// What WaitWriterBlocked cannot see: only the direct child's threads are
// inspected (a server started through a shell shows only the pipe
// evidence); a writer blocked on a pipe that very small writes filled in
// fragments may not look full (see pipes.Pipe.Full) and is then only seen
// through /proc; by the pipe evidence alone, a server that wrote within a
// page of the pipe's capacity and then stopped looks like a blocked writer.
// The pipe is effectively full within a page of its capacity
// (pipes.EffectivelyFull); a one-page pipe must be entirely full.

// WaitWriterBlocked returns once reads are stalled and the server is blocked
// writing stdout, bounded by ctx and the session timeout. When the bound
// runs out first, the error is a *NotBlockedError: what the stdout pipe and
// the server did while it waited (a slow writer is not a stopped one).
func (s *Session) WaitWriterBlocked(ctx context.Context) error {
	// Blocked is a thread in write on the pipe (Linux), or the pipe full on two
	// looks; the evidence is in Stats.WriterEvidence.
	ctx, cancel := s.bound(ctx)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	begin := time.Now()
	spacing := pollInterval
	if dl, ok := ctx.Deadline(); ok {
		spacing = max(dl.Sub(begin)/(maxFillSamples-1), pollInterval)
	}
	samples := []FillSample{s.fillSample(begin)}
	prevFull := -1
	for {
		s.mu.Lock()
		err := s.closedErrLocked("waiting for the server to block writing stdout")
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if now := time.Now(); now.Sub(samples[len(samples)-1].At) >= spacing && len(samples) < maxFillSamples-1 {
			samples = append(samples, s.fillSample(now))
		}
		if s.valve.Stalled() {
			ev := WriterEvidence{At: time.Now()}
			s.sampleFull()
			var full bool
			full, ev.Buffered, ev.Capacity = s.stdoutFull()
			if full && prevFull == ev.Buffered {
				ev.PipeFull = true
			}
			if full {
				prevFull = ev.Buffered
			} else {
				prevFull = -1
			}
			if pid := s.proc.pid(); pid > 0 {
				ts, _ := threadStates(pid, s.stdout.R)
				for _, th := range ts {
					if th.write {
						ev.Threads = append(ev.Threads, th.String())
					}
				}
			}
			if ev.PipeFull || len(ev.Threads) > 0 {
				s.mu.Lock()
				s.evidence = ev
				s.logLocked("writer blocked: %s", ev)
				s.mu.Unlock()
				return nil
			}
		} else {
			prevFull = -1
		}
		s.mu.Lock()
		ch := s.changedLocked()
		s.mu.Unlock()
		select {
		case <-t.C:
		case <-ch: // closed, or the server ended
		case <-ctx.Done():
			what := "waiting for the server to block writing stdout"
			if !s.valve.Stalled() {
				what += " (host reads are not stalled: call StallReads first)"
			}
			e := &NotBlockedError{Stalled: s.valve.Stalled(), Capacity: s.stdout.Capacity(), Running: -1}
			e.Samples = append(samples, s.fillSample(time.Now()))
			if pid := s.proc.pid(); pid > 0 {
				if ts, err := threadStates(pid, s.stdout.R); err == nil {
					e.Running = 0
					for _, th := range ts {
						if th.syscall < 0 && th.wchan == "0" {
							e.Running++
						}
					}
				}
			}
			e.Wait = s.waitError(what+" ("+e.Summary()+")", ctx.Err()).(*WaitError)
			return e
		}
	}
}

// maxFillSamples is how many looks at the stdout pipe a NotBlockedError
// keeps: evenly spaced over the wait, the last at its end.
const maxFillSamples = 17

// FillSample is one look at the stdout pipe and the server's scheduling
// during WaitWriterBlocked.
type FillSample struct {
	At       time.Time // when the look was taken
	Buffered int       // bytes waiting in the stdout pipe; -1 where the system does not tell
	// CPU is the time the server's threads have run on a CPU so far and
	// Queued the time they have been runnable waiting for one (Linux
	// schedstat, child servers; a thread's wait is counted when it next
	// runs); both -1 where unknown.
	CPU, Queued time.Duration
}

func (s *Session) fillSample(at time.Time) FillSample {
	f := FillSample{At: at, Buffered: -1, CPU: -1, Queued: -1}
	if b, err := s.stdout.Buffered(); err == nil {
		f.Buffered = b
	}
	if pid := s.proc.pid(); pid > 0 {
		if run, q, ok := schedTimes(pid); ok {
			f.CPU, f.Queued = run, q
		}
	}
	return f
}

// NotBlockedError is WaitWriterBlocked's error when its bound ran out
// before the server blocked writing stdout. It says what was seen while it
// waited, so that a verdict can tell a server still writing (the pipe
// filling), one busy or starved of CPU, and one idle with its output
// written; the bound itself is the caller's, not a fact about the server.
type NotBlockedError struct {
	Wait     *WaitError   // the bound's error, with the diagnosis at the end
	Stalled  bool         // host reads were stalled at the end
	Capacity int          // the stdout pipe's capacity; 0 where unknown
	Samples  []FillSample // evenly spaced over the wait, oldest first; the first at its start, the last at its end
	Running  int          // (Linux, child servers) the server's threads in no system call at the end, on a CPU or waiting for one; -1 where unknown
}

// Error returns the wait's error, its first line with Summary.
func (e *NotBlockedError) Error() string { return e.Wait.Error() }

// Unwrap returns the *WaitError.
func (e *NotBlockedError) Unwrap() error { return e.Wait }

// Waited returns how long the wait lasted.
func (e *NotBlockedError) Waited() time.Duration {
	return e.Samples[len(e.Samples)-1].At.Sub(e.Samples[0].At)
}

// Window returns the looks that bound the wait's second half, over which
// progress is judged: from is the last look at or before its middle, to
// the last look.
func (e *NotBlockedError) Window() (from, to FillSample) {
	to = e.Samples[len(e.Samples)-1]
	mid := e.Samples[0].At.Add(e.Waited() / 2)
	from = e.Samples[0]
	for _, f := range e.Samples {
		if !f.At.After(mid) {
			from = f
		}
	}
	return from, to
}

// Rate returns how fast the stdout pipe filled over Window, in bytes per
// second (0 if it did not change; negative if it drained, which stalled
// reads do not do), and whether the fill level was known.
func (e *NotBlockedError) Rate() (bytesPerSec float64, known bool) {
	from, to := e.Window()
	d := to.At.Sub(from.At)
	if from.Buffered < 0 || to.Buffered < 0 || d <= 0 {
		return 0, false
	}
	return float64(to.Buffered-from.Buffered) / d.Seconds(), true
}

// Demand returns the share of one CPU the server used or waited for over
// Window (CPU plus Queued time per wall-clock time: near 1 or more for a
// server busy computing, even one starved of CPU by others), and whether
// it is known.
func (e *NotBlockedError) Demand() (share float64, known bool) {
	from, to := e.Window()
	d := to.At.Sub(from.At)
	if from.CPU < 0 || to.CPU < 0 || d <= 0 {
		return 0, false
	}
	return float64(to.CPU-from.CPU+to.Queued-from.Queued) / float64(d), true
}

// Summary says in one line what was seen: the pipe's fill level at the
// end, how it moved over Window, the server's CPU demand there and its
// running threads.
func (e *NotBlockedError) Summary() string {
	from, to := e.Window()
	win := to.At.Sub(from.At).Round(time.Millisecond)
	var parts []string
	if !e.Stalled {
		parts = append(parts, "host reads were not stalled")
	}
	rate, known := e.Rate()
	switch {
	case !known:
		parts = append(parts, fmt.Sprintf("after %v the stdout pipe's fill level is unknown", e.Waited().Round(time.Millisecond)))
	case rate > 0:
		p := fmt.Sprintf("after %v the stdout pipe held %d/%d bytes, rising over the last %v from %d (%.1f KB/s)", e.Waited().Round(time.Millisecond), to.Buffered, e.Capacity, win, from.Buffered, rate/1000)
		if e.Capacity > to.Buffered {
			p += fmt.Sprintf(", full at that rate in about %v", time.Duration(float64(e.Capacity-to.Buffered)/rate*float64(time.Second)).Round(100*time.Millisecond))
		}
		parts = append(parts, p)
	default:
		parts = append(parts, fmt.Sprintf("after %v the stdout pipe held %d/%d bytes, unchanged over the last %v", e.Waited().Round(time.Millisecond), to.Buffered, e.Capacity, win))
	}
	if share, ok := e.Demand(); ok {
		parts = append(parts, fmt.Sprintf("the server's CPU demand over those %v %.0f%% of a CPU (%v on a CPU, %v waiting for one)", win, 100*share, (to.CPU-from.CPU).Round(time.Millisecond), (to.Queued-from.Queued).Round(time.Millisecond)))
	}
	if e.Running >= 0 {
		parts = append(parts, fmt.Sprintf("%d of its threads running or runnable at the end", e.Running))
	}
	return strings.Join(parts, "; ")
}

// waitStdoutBytes is hostctl.WaitStdoutBytes.
func (s *Session) waitStdoutBytes(ctx context.Context, n int64) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	// Bytes arrive mid-frame with no event to wait on (the dispatcher
	// signals whole messages only), so the counter is polled as well.
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	for {
		if s.valve.BytesRead() >= n {
			return nil
		}
		s.mu.Lock()
		ch := s.changedLocked()
		ended := s.stdoutErr != nil
		err := s.closedErrLocked(fmt.Sprintf("waiting for %d stdout bytes (got %d)", n, s.valve.BytesRead()))
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if ended && s.valve.BytesRead() < n {
			return s.waitError(fmt.Sprintf("waiting for %d stdout bytes (got %d)", n, s.valve.BytesRead()), fmt.Errorf("stdout ended"))
		}
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			// The count as of the deadline: bytes that arrived by then
			// are a success, not a failure that names them.
			got := s.valve.BytesRead()
			if got >= n {
				return nil
			}
			return s.waitError(fmt.Sprintf("waiting for %d stdout bytes (got %d by the deadline)", n, got), ctx.Err())
		}
	}
}

// stdoutFull reports whether the stdout pipe is full, with its fill level
// and capacity (zero where unknown).
func (s *Session) stdoutFull() (full bool, buffered, capacity int) {
	b, err := s.stdout.Buffered()
	if err != nil {
		return false, 0, 0
	}
	c := s.stdout.Capacity()
	return pipes.EffectivelyFull(b, c), b, c
}

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
