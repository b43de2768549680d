package mcptest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The numbers of the stopped-or-slow rule that Activity's doc states: its
// window, how often it looks, and the CPU demand (demandBetween) under which
// a server may be stopped.
const (
	activityWindow = 500 * time.Millisecond
	activityLook   = 50 * time.Millisecond
	demandFloor    = 0.10
	// waitCap bounds the run-queue wait counted per unit of a thread's run
	// time: a busy thread that a loaded machine gives a twentieth of a core
	// waits the rest and still counts as busy; an idle runtime thread that
	// waits long for its few microseconds barely counts.
	waitCap = 32
)

// Activity is what a server did over a window of time: the bytes it took
// from stdin and wrote to stdout, its CPU demand, and its threads.
//
// Stopped or slow is one rule, used by WaitStopped, WaitWriterBlocked and
// the criteria of package assertions. The server is stopped when, over its
// quiet time (since it last took a byte from stdin or wrote one to stdout),
// at least half a second long and at least twice the longest gap between
// two of its reads of stdin seen in the same wait (a window shorter than
// the server's own gap between reads cannot tell slow from stopped), it
// took nothing from stdin, wrote nothing to stdout, its CPU demand (run
// time plus run-queue wait, which load does not starve; children that
// ended in between included) stayed under a tenth of a CPU, no thread was
// runnable at the last look without having run over the quiet time
// (starved by a loaded machine: Linux counts its wait only once it runs),
// and at the last look a thread of it was blocked writing stdout, or every
// thread was asleep or had not run at all, none of them waiting for a
// process the server started (wait4: its own work) and its CPU demand over
// the whole wait under the floor too (a server that works in bursts is
// asleep between them). It is busy when it took or wrote bytes or its
// demand reached the floor: callers then watch on, up to their bound, and
// report the rate. The server's threads are those of its process and its
// descendants (Linux /proc, child servers); where they cannot be seen
// (another system, an in-process server) nothing is conclusive: Known is
// false, and callers keep their bounds and say "unverified".
type Activity struct {
	Known         bool          // the server's threads could be seen (Linux, a child process); without, Stopped is never set
	Stopped       bool          // stopped by the rule: nothing taken or written, CPU demand under 10% of a CPU, a thread blocked writing stdout or every thread asleep
	Busy          bool          // busy by the rule: bytes taken or written, or CPU demand at least 10% of a CPU
	Window        time.Duration // the time watched
	StdinTaken    int64         // bytes taken from stdin over Window; -1 where unknown
	StdinWaiting  int           // bytes left waiting in the stdin pipe at the end; -1 where unknown
	StdoutWritten int64         // bytes written to stdout over Window
	Demand        float64       // CPU demand over Window, in CPUs (run time plus run-queue wait per wall-clock time); -1 where unknown
	Threads       string        // what the threads did at the end: "thread 12: syscall 1 (write fd 1), wchan pipe_write", "all 7 threads asleep"
	Gap           time.Duration // the longest time between two reads of stdin seen before Window in the same wait; a Window under twice it is never Stopped
	Whole         float64       // CPU demand over the whole wait, in CPUs; -1 where unknown or not yet judged

	writing bool // a thread was blocked writing stdout at the end
}

// String says what was seen, with the evidence.
func (a Activity) String() string {
	w := a.Window.Round(time.Millisecond)
	taken := "an unknown number of bytes"
	if a.StdinTaken >= 0 {
		taken = fmt.Sprintf("%d bytes", a.StdinTaken)
	}
	s := fmt.Sprintf("over %v it took %s from stdin", w, taken)
	if a.StdinWaiting >= 0 {
		s += fmt.Sprintf(" (%d waiting in the pipe)", a.StdinWaiting)
	}
	s += fmt.Sprintf(" and wrote %d bytes to stdout", a.StdoutWritten)
	if !a.Known {
		return "unverified (its threads cannot be seen here): " + s
	}
	s += fmt.Sprintf("; CPU demand %.0f%% of a CPU; %s", 100*a.Demand, a.Threads)
	if a.Whole >= demandFloor {
		s += fmt.Sprintf("; over the whole wait its CPU demand was %.0f%% of a CPU", 100*a.Whole)
	}
	if a.Gap >= activityWindow/2 {
		s += fmt.Sprintf("; it had gone %v between two reads of stdin before", a.Gap.Round(time.Millisecond))
	}
	if a.Stopped {
		return "stopped: " + s
	}
	return s
}

// sight is one look at the server for the rule.
type sight struct {
	at             time.Time
	taken, written int64 // stdin bytes taken and stdout bytes written so far; taken -1 where unknown
	waiting        int   // bytes in the stdin pipe; -1 where unknown
	threads        []threadState
	reaped         time.Duration // CPU of the tree's children that ended
	known          bool
}

func (s *Session) sight() sight {
	l := sight{at: time.Now(), taken: -1, waiting: -1}
	s.mu.Lock()
	sent := s.stats.StdinBytes
	s.mu.Unlock()
	if b, _, err := pipeFill(s.stdin.W); err == nil {
		l.taken, l.waiting = sent-int64(b), b
	}
	l.written = s.valve.BytesRead()
	if b, err := s.stdout.Buffered(); err == nil {
		l.written += int64(b)
	}
	if pid := s.proc.pid(); pid > 0 {
		l.threads, l.reaped, l.known = treeStates(pid, s.stdout.R)
	}
	return l
}

// demandBetween is the CPU the threads wanted between two looks: their run
// time, plus each one's run-queue wait up to waitCap times its run time,
// plus the run time of children that ended in between.
func demandBetween(from, to sight) time.Duration {
	before := map[[2]int]threadState{}
	for _, t := range from.threads {
		before[[2]int{t.pid, t.tid}] = t
	}
	d := max(to.reaped-from.reaped, 0)
	for _, t := range to.threads {
		f := before[[2]int{t.pid, t.tid}] // a new thread counts from zero
		if run, wait := t.run-f.run, t.wait-f.wait; run > 0 {
			d += run + min(max(wait, 0), waitCap*run)
		}
	}
	return d
}

// activityOf applies the rule to the looks from and to.
func activityOf(from, to sight) Activity {
	a := Activity{Known: from.known && to.known, Window: to.at.Sub(from.at), StdinTaken: -1, StdinWaiting: to.waiting, StdoutWritten: to.written - from.written, Demand: -1, Whole: -1}
	if from.taken >= 0 && to.taken >= 0 {
		a.StdinTaken = to.taken - from.taken
	}
	if !a.Known || a.Window <= 0 {
		return a
	}
	a.Demand = float64(demandBetween(from, to)) / float64(a.Window)
	a.Busy = a.StdinTaken > 0 || a.StdoutWritten > 0 || a.Demand >= demandFloor
	before := map[[2]int]threadState{}
	for _, t := range from.threads {
		before[[2]int{t.pid, t.tid}] = t
	}
	var writing []string
	asleep, starved, waiting := 0, 0, 0
	wchans := map[string]int{}
	for _, t := range to.threads {
		if t.write {
			writing = append(writing, "thread "+t.String())
		}
		f, seen := before[[2]int{t.pid, t.tid}]
		switch {
		case t.state == 'R' && seen && t.run == f.run:
			starved++
		case t.state == 'S' || t.state == 'D' || t.state == 'I' || seen && t.run == f.run:
			asleep++
			wchans[t.wchan]++
		}
		if t.wchan == "do_wait" {
			waiting++
		}
	}
	switch {
	case len(writing) > 0:
		a.Threads = strings.Join(writing, "; ")
	case asleep == len(to.threads):
		var ws []string
		for _, w := range slices.Sorted(maps.Keys(wchans)) {
			ws = append(ws, fmt.Sprintf("%s ×%d", w, wchans[w]))
		}
		a.Threads = fmt.Sprintf("all %d threads asleep (in %s)", asleep, strings.Join(ws, ", "))
	default:
		a.Threads = fmt.Sprintf("%d of %d threads running or runnable", len(to.threads)-asleep, len(to.threads))
	}
	if starved > 0 {
		a.Threads += fmt.Sprintf("; %d runnable but given no CPU over the window (a loaded machine: slow, not stopped)", starved)
	}
	if waiting > 0 && len(writing) == 0 {
		a.Threads += "; waiting for a process it started (wait4): its own work, slow, not stopped"
	}
	a.writing = len(writing) > 0
	a.Stopped = a.Window >= activityWindow && !a.Busy && starved == 0 && (len(writing) > 0 || asleep == len(to.threads) && waiting == 0)
	return a
}

// errUnseen is WaitStopped's error where the server's threads cannot be seen.
var errUnseen = errors.New("the server's threads cannot be seen (an in-process server, or no /proc here): whether it stopped is unverified")

// watch applies the rule to the looks of one wait, in order: it keeps the
// look that began the server's quiet time and the longest gap between two
// reads of stdin seen so far.
type watch struct {
	first       sight
	prev, quiet sight
	lastRead    time.Time // the look that last saw stdin taken; zero before one
	gap         time.Duration
}

func newWatch(first sight) *watch { return &watch{first: first, prev: first, quiet: first} }

// add takes the next look and returns the activity over the quiet time up
// to it, Stopped only by the whole rule.
func (w *watch) add(l sight) Activity {
	read := w.prev.taken >= 0 && l.taken > w.prev.taken
	if read || l.written > w.prev.written {
		w.quiet = l
	}
	if read {
		if !w.lastRead.IsZero() {
			w.gap = max(w.gap, l.at.Sub(w.lastRead))
		}
		w.lastRead = l.at
	}
	w.prev = l
	a := activityOf(w.quiet, l)
	a.Gap = w.gap
	if a.Window < 2*w.gap {
		a.Stopped = false
	}
	if a.Stopped && !a.writing {
		// Asleep is weaker evidence than a thread in write: a server
		// that works in bursts (a child it forks, a timer) is asleep
		// between them. Its demand over the whole wait must be low too.
		if whole := activityOf(w.first, l); whole.Demand >= demandFloor {
			a.Stopped, a.Whole = false, whole.Demand
		}
	}
	return a
}

// WaitStopped returns once the server is stopped by the rule Activity
// describes (the Activity over the server's quiet time says so, with the
// evidence), looking every 50ms. It returns an error with the Activity so
// far when ctx or the session timeout ends first (a *WaitError; the
// Activity is then the whole watch: slow is not stopped), when the server
// ends, or, at once, when its threads cannot be seen (an in-process server,
// a system without /proc): whether it stopped is then unverified.
func (s *Session) WaitStopped(ctx context.Context) (Activity, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	first := s.sight()
	if !first.known {
		return activityOf(first, first), errUnseen
	}
	w := newWatch(first)
	last := first
	t := time.NewTicker(activityLook)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			a := activityOf(first, s.sight())
			a.Gap = w.gap
			return a, s.waitError("waiting for the server to stop", ctx.Err())
		}
		if s.Stats().Exit.How != "" {
			return activityOf(first, last), fmt.Errorf("mcptest: the server ended (%s)", s.Stats().Exit)
		}
		l := s.sight()
		if !l.known {
			return activityOf(first, last), errUnseen
		}
		last = l
		if a := w.add(l); a.Stopped {
			return a, nil
		}
	}
}
