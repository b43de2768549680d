package mcptest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// pollInterval is how often waits on kernel state (pipe fill levels, /proc)
// look again. Those states have no event to wait on; the waits are bounded.
const pollInterval = 2 * time.Millisecond

// StallReads makes the host stop reading the server's stdout at the read(2)
// level: when it returns, no further byte leaves the kernel pipe until
// ResumeReads, so the pipe fills and the server's writes block.
func (s *Session) StallReads() {
	s.valve.Stall()
	s.startMonitor()
	s.note("host reads stalled at %d stdout bytes", s.valve.BytesRead())
}

// StallReadsAfter lets exactly n more bytes of stdout through and then
// stalls reads, as StallReads.
func (s *Session) StallReadsAfter(n int64) {
	s.valve.StallAfter(n)
	s.startMonitor()
	s.note("host reads stall after %d more stdout bytes (at %d)", n, s.valve.BytesRead())
}

// ResumeReads lets the host read the server's stdout again.
func (s *Session) ResumeReads() {
	s.sampleFull()
	s.mu.Lock()
	s.stallWanted = false
	s.mu.Unlock()
	s.valve.Resume()
	s.note("host reads resumed at %d stdout bytes", s.valve.BytesRead())
}

// startMonitor samples the stdout pipe while reads are stalled, to measure
// the time it spends effectively full (Stats.StdoutFullTime).
func (s *Session) startMonitor() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallWanted = true
	if s.monitoring || s.closing {
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
		if !s.stallWanted || s.closing {
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
// stdout.
type WriterEvidence struct {
	At time.Time
	// PipeFull: the stdout pipe was effectively full (pipes.Pipe.Full) on
	// consecutive looks, with host reads stalled so it could not drain. This
	// is the only evidence for in-process servers and for servers that make
	// stdout non-blocking and queue the rest in memory (Node).
	PipeFull bool
	Buffered int // bytes in the stdout pipe, if known
	Capacity int // the stdout pipe's capacity, if known
	// Threads are the server process's threads seen blocked writing
	// stdout: (Linux) /proc/<pid>/task/<tid>/syscall shows write or writev
	// on a descriptor of the session's stdout pipe; wchan (pipe_write,
	// anon_pipe_write) is shown beside it.
	Threads []ThreadState
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
		parts = append(parts, "thread "+t.String())
	}
	return strings.Join(parts, "; ")
}

// ThreadState is a server thread as Linux /proc shows it.
type ThreadState struct {
	TID     int
	Syscall int64  // the system call it is in; -1 if running in user space
	Fd      int64  // its first argument (for write: the file descriptor), if in a call
	Wchan   string // the kernel function it waits in, "0" or "" if none
	Write   bool   // blocked writing stdout: write/writev on the session's stdout pipe (fd 1 if /proc/<pid>/fd is unreadable)
}

// String formats the thread as "tid: syscall N (name fd F), wchan W".
func (t ThreadState) String() string {
	call := "running"
	if t.Syscall >= 0 {
		call = fmt.Sprintf("syscall %d (%s fd %d)", t.Syscall, syscallName(t.Syscall), t.Fd)
	}
	return fmt.Sprintf("%d: %s, wchan %s", t.TID, call, t.Wchan)
}

// WaitWriterBlocked returns once host reads are stalled and the server is
// blocked writing its stdout, bounded by ctx and the session timeout. The
// evidence is either of: (Linux, child processes) a thread blocked writing
// the stdout pipe (see ThreadState), or the stdout pipe effectively full on
// two consecutive looks while reads are stalled (pipes.EffectivelyFull:
// within a page of capacity; a one-page pipe entirely full). What was seen
// is in Stats.WriterEvidence and Diagnose. The kernel state is polled every
// 2ms; on failure the error is a *WaitError with a diagnosis.
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
	prevFull := -1
	for {
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
					if th.Write {
						ev.Threads = append(ev.Threads, th)
					}
				}
			}
			if ev.PipeFull || len(ev.Threads) > 0 {
				s.mu.Lock()
				s.evidence = ev
				s.mu.Unlock()
				s.note("writer blocked: %s", ev)
				return nil
			}
		} else {
			prevFull = -1
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			what := "waiting for the server to block writing stdout"
			if !s.valve.Stalled() {
				what += " (host reads are not stalled: call StallReads first)"
			}
			return s.waitError(what, ctx.Err())
		}
	}
}

// WaitStdoutBytes returns once the host has received at least n bytes of the
// server's stdout in all, bounded by ctx and the session timeout.
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
		s.mu.Unlock()
		if ended && s.valve.BytesRead() < n {
			return s.waitError(fmt.Sprintf("waiting for %d stdout bytes (got %d)", n, s.valve.BytesRead()), fmt.Errorf("stdout ended"))
		}
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return s.waitError(fmt.Sprintf("waiting for %d stdout bytes (got %d)", n, s.valve.BytesRead()), ctx.Err())
		}
	}
}

// WaitNotification returns the oldest notification with the given method
// that no earlier WaitNotification returned, waiting for one to arrive,
// bounded by ctx and the session timeout. The session keeps the last 1024
// notifications.
func (s *Session) WaitNotification(ctx context.Context, method string) (*wire.Message, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	for {
		s.mu.Lock()
		for i := range s.notes {
			if n := &s.notes[i]; !n.taken && n.msg.Method == method {
				n.taken = true
				s.mu.Unlock()
				return n.msg, nil
			}
		}
		ch := s.changedLocked()
		ended := s.failErr != nil && s.stdoutErr != nil
		s.mu.Unlock()
		if ended {
			return nil, s.waitError("waiting for notification "+method, fmt.Errorf("server stdout ended"))
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, s.waitError("waiting for notification "+method, ctx.Err())
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
