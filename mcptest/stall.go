package mcptest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// pollInterval is how often waits on kernel state (pipe fill levels, /proc)
// look again. Those states have no event to wait on; the waits are bounded.
const pollInterval = 2 * time.Millisecond

// threadLook is how often WaitWriterBlocked reads the server's threads in
// /proc while the stdout pipe does not look full (when it does, it reads
// them on every poll): each look reads several files per thread, which is
// most of a wait's CPU, while a writer blocked on a pipe that does not
// look full (small writes in fragments) stays blocked until reads resume.
const threadLook = 16 * time.Millisecond

// StallReads makes the host stop reading the server's stdout at the read(2)
// level until ResumeReads, so the pipe fills and the server's writes block.
// When it returns, no further byte leaves the kernel pipe: a read in flight
// is interrupted, not waited out. Bytes the host had already read are still
// dispatched. On a closed session it does nothing.
func (s *Session) StallReads() {
	if s.isClosed() {
		return
	}
	s.valve.Stall()
	s.startMonitor()
	s.logf("host reads stalled at %d stdout bytes", s.valve.BytesRead())
}

// StallReadsAfter lets exactly n more bytes of the server's stdout through,
// counted from when it returns, and then stalls reads as StallReads does,
// until ResumeReads; StallReadsAfter(0) is StallReads. Like StallReads it
// first interrupts a read in flight and waits for it to end (that read was
// sized before the call and could take more than n bytes); it does not wait
// for the n bytes. The stall happens when the n-th byte has been read, in
// the middle of a frame if that is where it falls (Stdout().Stalled says
// when; Response.Offset and Pending.Received help place n). A criterion
// uses it to let the head of a response through and stop the host inside
// it. A later StallReads, StallReadsAfter or ResumeReads supersedes it. On
// a closed session it does nothing.
func (s *Session) StallReadsAfter(n int64) {
	if s.isClosed() {
		return
	}
	s.valve.StallAfter(n)
	s.startMonitor()
	s.logf("host reads stall after %d more stdout bytes (at %d)", n, s.valve.BytesRead())
}

// ResumeReads lets the host read the server's stdout again, without limit.
// It never waits. On a closed session, StallReads, StallReadsAfter and
// ResumeReads do nothing: Close reads stdout to its end.
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

// WriterEvidence is what showed that the server is blocked writing its
// stdout (WaitWriterBlocked).
type WriterEvidence struct {
	At time.Time
	// PipeFull: the stdout pipe was effectively full (pipes.EffectivelyFull)
	// with the same fill level on consecutive looks, with host reads
	// stalled so it could not drain. This is the only evidence for
	// in-process servers and for servers that make stdout non-blocking and
	// queue the rest in memory (Node).
	PipeFull bool
	Buffered int // bytes in the stdout pipe, if known
	Capacity int // the stdout pipe's capacity, if known
	// Threads are the server process's threads seen blocked writing
	// stdout, as "tid: syscall N (write fd F), wchan W": (Linux)
	// /proc/<pid>/task/<tid>/syscall shows write or writev on a descriptor
	// of the session's stdout pipe; the wchan (pipe_write,
	// anon_pipe_write) is shown beside it.
	Threads []string
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
	pid     int
	tid     int
	state   byte          // R running or runnable, S or D asleep, … (0 if unknown)
	run     time.Duration // time on a CPU so far; -1 if unknown
	wait    time.Duration // time runnable waiting for a CPU so far (counted when it next runs)
	syscall int64         // the system call it is in; -1 if running in user space
	fd      int64         // its first argument (for write: the file descriptor), if in a call
	wchan   string        // the kernel function it waits in, "0" or "" if none
	write   bool          // blocked writing stdout: write/writev on the session's stdout pipe (fd 1 if /proc/<pid>/fd is unreadable)
}

// String formats the thread as "tid: syscall N (name fd F), wchan W".
func (t threadState) String() string {
	call := "running"
	if t.syscall >= 0 {
		call = fmt.Sprintf("syscall %d (%s fd %d)", t.syscall, syscallName(t.syscall), t.fd)
	}
	return fmt.Sprintf("%d: %s, wchan %s", t.tid, call, t.wchan)
}

// WaitWriterBlocked returns nil once host reads are stalled and the server
// is blocked writing its stdout, bounded by ctx and the session timeout.
// The evidence is either of: (Linux, child processes) a thread of the
// server blocked writing the stdout pipe, or the stdout pipe effectively
// full with the same fill level on two consecutive looks while reads are
// stalled (pipes.EffectivelyFull: within a page of capacity; a one-page pipe
// entirely full). What was seen is in Stats.WriterEvidence and Diagnose.
// The pipe is looked at every 2ms, the threads every 16ms while the pipe
// does not look full; neither state has an event to wait on. Call
// StallReads first: with reads flowing it waits for the bound.
//
// When the bound runs out first, or the server stops (see WaitStopped) with
// output in the pipe but short of blocking it, the error is a
// *NotBlockedError: what the stdout pipe and the server did while it waited
// (a slow writer is not a stopped one). A server that has ended gives one
// at once. After Close the error wraps ErrClosed.
//
// Limits: only the direct child's threads are inspected (a server started
// through a shell shows only the pipe evidence); a writer blocked on a pipe
// that very small writes filled in fragments may not look full (see
// pipes.Pipe.Full) and is then only seen through /proc; conversely, by the
// pipe evidence alone, a server that wrote within a page of the pipe's
// capacity and then stopped looks like a blocked writer.
func (s *Session) WaitWriterBlocked(ctx context.Context) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	t := time.NewTicker(pollInterval)
	defer t.Stop()
	looks := []sight{s.sight()}
	w := newWatch(looks[0])
	var seen Activity // the rule's view of the latest look
	prevFull := -1
	var threadsAt time.Time // the last look at the threads
	for {
		s.mu.Lock()
		err := s.closedErrLocked("waiting for the server to block writing stdout")
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if now := time.Now(); now.Sub(looks[len(looks)-1].at) >= activityLook {
			looks = append(looks, s.sight())
			seen = w.add(looks[len(looks)-1])
		}
		if isClosed(s.proc.done()) {
			// An ended server blocks nothing: say so now, not at the bound.
			ex := s.proc.exit()
			return s.notBlocked(ctx, "waiting for the server to block writing stdout: it ended ("+ex.String()+")", looks, activityOf(looks[0], looks[len(looks)-1]), errors.New("the server ended"))
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
			if pid := s.proc.pid(); pid > 0 && (full || ev.At.Sub(threadsAt) >= threadLook) {
				threadsAt = ev.At
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
			// Stopped with its output short of the pipe's capacity: it
			// will not block it. An empty pipe proves less (the server
			// may be waiting on something before it writes at all).
			if ev.Buffered > 0 && seen.Stopped {
				return s.notBlocked(ctx, "waiting for the server to block writing stdout: it stopped short of it", looks, seen, errors.New("the server stopped"))
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
			looks = append(looks, s.sight())
			last := looks[len(looks)-1]
			mid := looks[0].at.Add(last.at.Sub(looks[0].at) / 2)
			from := looks[0]
			for _, l := range looks {
				if !l.at.After(mid) {
					from = l
				}
			}
			return s.notBlocked(ctx, what, looks, activityOf(from, last), ctx.Err())
		}
	}
}

// notBlocked makes WaitWriterBlocked's *NotBlockedError from its looks and
// the activity that decided.
func (s *Session) notBlocked(ctx context.Context, what string, looks []sight, a Activity, cause error) error {
	e := &NotBlockedError{Stalled: s.valve.Stalled(), Capacity: s.stdout.Capacity(), Buffered: -1, Activity: a}
	if b, err := s.stdout.Buffered(); err == nil {
		e.Buffered = b
	}
	e.Waited = looks[len(looks)-1].at.Sub(looks[0].at)
	e.Wait = s.waitError(what+" ("+e.Summary()+")", cause).(*WaitError)
	return e
}

// NotBlockedError is WaitWriterBlocked's error when its bound ran out, or
// the server stopped, before the server blocked writing stdout. It says what
// was seen, so that a verdict can tell a server still writing (the pipe
// filling), one busy or starved of CPU, and one stopped with its output
// written; the bound itself is the caller's, not a fact about the server.
type NotBlockedError struct {
	Wait     *WaitError    // the bound's error, with the diagnosis at the end
	Stalled  bool          // host reads were stalled at the end
	Capacity int           // the stdout pipe's capacity; 0 where unknown
	Buffered int           // bytes in the stdout pipe at the end; -1 where unknown
	Waited   time.Duration // how long the wait lasted
	Activity Activity      // what the server did over the wait's second half, or the half second that showed it stopped
}

// Error returns the wait's error, its first line with Summary.
func (e *NotBlockedError) Error() string { return e.Wait.Error() }

// Unwrap returns the *WaitError.
func (e *NotBlockedError) Unwrap() error { return e.Wait }

// Summary says in one line what was seen: the pipe's fill level at the
// end, and what the server did (Activity), with the rate at which the pipe
// filled and when, at that rate, it would be full.
func (e *NotBlockedError) Summary() string {
	var parts []string
	if !e.Stalled {
		parts = append(parts, "host reads were not stalled")
	}
	a := e.Activity
	if e.Buffered < 0 {
		parts = append(parts, fmt.Sprintf("after %v the stdout pipe's fill level is unknown", e.Waited.Round(time.Millisecond)))
	} else {
		p := fmt.Sprintf("after %v the stdout pipe held %d/%d bytes", e.Waited.Round(time.Millisecond), e.Buffered, e.Capacity)
		if rate := float64(a.StdoutWritten) / a.Window.Seconds(); a.StdoutWritten > 0 && a.Window > 0 {
			p += fmt.Sprintf(", filling at %.1f KB/s", rate/1000)
			if e.Capacity > e.Buffered {
				p += fmt.Sprintf(", full at that rate in about %v", time.Duration(float64(e.Capacity-e.Buffered)/rate*float64(time.Second)).Round(100*time.Millisecond))
			}
		}
		parts = append(parts, p)
	}
	parts = append(parts, "the server "+a.String())
	return strings.Join(parts, "; ")
}

// WaitStdoutBytes returns nil once the host has read at least n bytes of
// the server's stdout in all (Stdout().Read, counted from the session's
// start), bounded by ctx and the session timeout. It returns a *WaitError
// naming the bytes read so far if the bound runs out or stdout ends first
// (bytes read by the bound count as a success), and an error wrapping
// ErrClosed once Close has begun. Bytes that arrive inside a frame have no
// event to wait on, so the count is looked at every 2ms as well. Reads must
// be flowing for the count to grow: with reads stalled it waits for the
// bound.
func (s *Session) WaitStdoutBytes(ctx context.Context, n int64) error {
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
