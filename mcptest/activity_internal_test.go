package mcptest

import (
	"strings"
	"testing"
	"time"
)

// TestActivityStarvedIsNotStopped: a thread runnable at the last look that
// got no CPU over the window (measured by hand: a spinning process pinned
// with a SCHED_FIFO spinner on its CPU shows 500 ms windows of run +0 ms,
// wait +0 ms, state R: Linux counts the wait only once it runs) is a
// loaded machine starving the server, not a stop, even with another thread
// blocked writing stdout; the same server with that thread asleep is
// stopped.
func TestActivityStarvedIsNotStopped(t *testing.T) {
	t.Parallel()
	writer := threadState{pid: 1, tid: 1, state: 'S', run: time.Second, syscall: 1, fd: 1, wchan: "pipe_write", write: true}
	worker := threadState{pid: 1, tid: 2, state: 'R', run: 3 * time.Second, syscall: -1}
	at := time.Now()
	from := sight{at: at, taken: 100, written: 100, waiting: 65536, threads: []threadState{writer, worker}, known: true}
	to := from
	to.at = at.Add(activityWindow)

	a := activityOf(from, to)
	if a.Stopped || a.Busy {
		t.Errorf("a runnable thread given no CPU: Stopped %v, Busy %v, want neither (%s)", a.Stopped, a.Busy, a.Threads)
	}
	if !strings.Contains(a.Threads, "1 runnable but given no CPU over the window") {
		t.Errorf("the evidence does not name the starved thread: %s", a.Threads)
	}

	asleep := worker
	asleep.state, asleep.wchan = 'S', "futex_do_wait"
	to.threads = []threadState{writer, asleep}
	if a := activityOf(from, to); !a.Stopped {
		t.Errorf("a thread blocked writing stdout and one asleep, no CPU, nothing taken: not stopped (%s)", a.Threads)
	}
}
