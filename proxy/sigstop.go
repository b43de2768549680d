package proxy

// The sigstop fault, which acts on the server process rather than on a
// direction's bytes.

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/record"
)

// arm starts the timers of faults that act on the server process rather
// than on a direction (sigstop with After or no trigger).
func (s *faultSet) arm(p *Proxy) {
	for _, f := range s.all {
		if !f.processWide() {
			continue
		}
		f := f
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if !p.sleep(time.Duration(f.After)) {
				return
			}
			p.sigstop(f)
		}()
	}
}

// sleep waits d or until the proxy stops; it reports whether d passed.
func (p *Proxy) sleep(d time.Duration) bool { return sleepUnless(d, p.stop, nil) }

// sleepUnless waits d unless a or b is closed first (a nil one never is);
// it reports whether d passed. With d <= 0 it only looks.
func sleepUnless(d time.Duration, a, b <-chan struct{}) bool {
	select {
	case <-a:
		return false
	case <-b:
		return false
	default:
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-a:
		return false
	case <-b:
		return false
	}
}

// sigstop stops the server for f.For, then continues it; it continues it
// sooner when the faults let go of the server (see sessionend.go). It
// blocks.
func (p *Proxy) sigstop(f *faultState) {
	select {
	case <-p.exited:
		return
	default:
	}
	now := time.Now()
	if why, ok := p.faults.released(); ok {
		p.note(now, record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: "did not stop the server: " + why})
		return
	}
	if err := pauseServer(p.cmd.Process, true); err != nil {
		p.note(now, record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: "could not stop the server", Err: err.Error()})
		return
	}
	text := fmt.Sprintf("stopped the server (SIGSTOP) for %v", time.Duration(f.For))
	if at, seen := p.waitStopped(stopSeenWithin); seen {
		now = at
	} else if !at.IsZero() {
		text += fmt.Sprintf("; its threads were not all seen stopped within %v", stopSeenWithin)
	}
	p.note(now, record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: text})
	text = "continued the server (SIGCONT)"
	t := time.NewTimer(time.Duration(f.For))
	select {
	case <-t.C:
	case <-p.stop:
	case <-p.exited:
	case <-p.faults.release:
		text += ": " + p.faults.releaseWhy
	}
	t.Stop()
	now = time.Now() // before the signal: the server may answer at once
	err := pauseServer(p.cmd.Process, false)
	ev := record.Event{Ev: record.EvFault, Dir: f.Dir, Fault: &f.Fault, Text: text}
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		ev.Err = err.Error()
	}
	p.note(now, ev)
}

// stopSeenWithin bounds the wait for a stopped server's threads.
const stopSeenWithin = time.Second

// waitStopped waits, at most d, until every thread of the server is seen
// stopped, and returns when it was. SIGSTOP stops a process's threads one
// after another, after kill has returned: meanwhile another thread of the
// server can read a request and answer it (measured on Linux 6.18, two
// cores, one kept busy: a Go server answered a ping written after kill in
// 56 of 600 tries). It looks at /proc every millisecond: the stop's one
// announcement, wait4 with WUNTRACED, belongs to the goroutine os/exec
// waits in. at is zero where threads' states cannot be read (off Linux),
// or the proxy stopped or the server exited first.
func (p *Proxy) waitStopped(d time.Duration) (at time.Time, seen bool) {
	pid := p.cmd.Process.Pid
	deadline := time.Now().Add(d)
	for {
		stopped, known := proc.Stopped(pid)
		now := time.Now()
		switch {
		case !known:
			return time.Time{}, false
		case stopped:
			return now, true
		case now.After(deadline):
			return now, false
		}
		if !sleepUnless(time.Millisecond, p.stop, p.exited) {
			return time.Time{}, false
		}
	}
}
