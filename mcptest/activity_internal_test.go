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

// TestActivityGapAndWholeQuietTime: a server that reads stdin in bursts
// with seconds between them (desktop-commander 0.2.52 by hand: 15 KB every
// 4-9 s with its stdout blocked, 0.1-0.4 s of CPU a second) is not stopped
// over a quiet time shorter than twice its longest gap between reads, nor
// while its CPU demand over the whole quiet time reaches the floor, though
// its last half second was idle; past both it is.
func TestActivityGapAndWholeQuietTime(t *testing.T) {
	t.Parallel()
	at := time.Now()
	look := func(d time.Duration, taken int64, run time.Duration) sight {
		th := threadState{pid: 1, tid: 1, state: 'S', run: run, syscall: -1, wchan: "do_epoll_wait"}
		return sight{at: at.Add(d), taken: taken, written: 0, waiting: 15000, threads: []threadState{th}, known: true}
	}
	w := newWatch(look(0, 0, 0))
	w.add(look(50*time.Millisecond, 16000, 10*time.Millisecond))
	w.add(look(4*time.Second, 32000, 20*time.Millisecond)) // a read after a 3.95 s gap
	// Quiet for 1 s, with no CPU: the old half-second window said stopped.
	if a := w.add(look(5*time.Second, 32000, 20*time.Millisecond)); a.Stopped || a.Gap < 3*time.Second {
		t.Errorf("1 s quiet after a 3.95 s gap between reads: Stopped %v, Gap %v; want not stopped, the gap named", a.Stopped, a.Gap)
	}
	if a := w.add(look(12*time.Second, 32000, 20*time.Millisecond)); !a.Stopped || !strings.Contains(a.String(), "it had gone 3.95s between two reads of stdin before") {
		t.Errorf("8 s quiet, no CPU, after a 3.95 s gap: want stopped, the gap named: %s", a)
	}

	// CPU over the whole quiet time counts: 0.3 s in its first second,
	// none in its last half second, is 30% over 1 s and 15% over 2 s.
	w = newWatch(look(0, 0, 0))
	w.add(look(50*time.Millisecond, 16000, 0))
	w.add(look(550*time.Millisecond, 16000, 300*time.Millisecond))
	if a := w.add(look(1050*time.Millisecond, 16000, 300*time.Millisecond)); a.Stopped || !a.Busy {
		t.Errorf("0.3 s of CPU over a 1 s quiet time, none in its last half second: Stopped %v, Busy %v, want busy (demand %.2f)", a.Stopped, a.Busy, a.Demand)
	}
	if a := w.add(look(5*time.Second, 16000, 300*time.Millisecond)); !a.Stopped {
		t.Errorf("0.3 s of CPU over a 5 s quiet time (6%%): want stopped: %s", a)
	}

	// Asleep between bursts (desktop-commander at load 20: 30 KB of the
	// flood in 21 s, then 1.1 s asleep at 10%, a thread forking): with 2.5 s
	// of CPU over the 21 s before, the whole wait's demand says busy. A
	// thread blocked writing stdout is stopped all the same.
	bursts := func(look func(time.Duration, int64, time.Duration) sight) *watch {
		w := newWatch(look(0, 0, 0))
		for i := 1; i <= 40; i++ { // a read every half second, 62.5 ms of CPU each
			d := time.Duration(i) * 500 * time.Millisecond
			w.add(look(d, int64(i)*750, d/8))
		}
		return w
	}
	w = bursts(look)
	if a := w.add(look(21200*time.Millisecond, 30000, 2500*time.Millisecond)); a.Stopped || !strings.Contains(a.String(), "over the whole wait its CPU demand was") {
		t.Errorf("asleep 1.2 s after 2.5 s of CPU in 20 s: want not stopped, the whole wait's demand named: %s", a)
	}
	writer := func(d time.Duration, taken int64, run time.Duration) sight {
		l := look(d, taken, run)
		l.threads = []threadState{{pid: 1, tid: 1, state: 'S', run: run, syscall: 1, fd: 1, wchan: "pipe_write", write: true}}
		return l
	}
	w = bursts(writer)
	if a := w.add(writer(21200*time.Millisecond, 30000, 2500*time.Millisecond)); !a.Stopped {
		t.Errorf("blocked writing stdout 1.2 s after 2.5 s of CPU in 20 s: want stopped: %s", a)
	}
}

// TestActivityOwnChild: a server asleep waiting for a process it started
// (wait4, wchan do_wait: desktop-commander 0.2.52 once in a probe run, its
// event loop in a synchronous child for over a second) is at its own work,
// not stopped; and the CPU of children that ended between two looks
// (cutime, cstime) is the server's demand.
func TestActivityOwnChild(t *testing.T) {
	t.Parallel()
	at := time.Now()
	main := threadState{pid: 1, tid: 1, state: 'S', run: time.Second, syscall: -1, wchan: "do_wait"}
	from := sight{at: at, taken: 100, waiting: 15000, threads: []threadState{main}, known: true}
	to := from
	to.at = at.Add(time.Second)
	if a := activityOf(from, to); a.Stopped || !strings.Contains(a.Threads, "waiting for a process it started") {
		t.Errorf("asleep in do_wait: Stopped %v (%s), want not stopped, saying so", a.Stopped, a.Threads)
	}
	main.wchan = "do_epoll_wait"
	from.threads, to.threads = []threadState{main}, []threadState{main}
	if a := activityOf(from, to); !a.Stopped {
		t.Errorf("asleep in epoll, nothing reaped: want stopped (%s)", a)
	}
	to.reaped = 300 * time.Millisecond
	if a := activityOf(from, to); a.Stopped || !a.Busy || a.Demand < 0.29 {
		t.Errorf("300ms of CPU in children reaped over 1s: Stopped %v, Busy %v, Demand %.2f; want busy, 30%%", a.Stopped, a.Busy, a.Demand)
	}
}
