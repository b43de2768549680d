package assertions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// workSample is what can be seen of the server's work at one moment.
type workSample struct {
	at       time.Time
	progress int64 // progress notifications for the request
	answered bool  // its response has arrived
	cpu      time.Duration
	procs    map[int]string              // the server's live descendants
	threads  map[string][2]time.Duration // "pid/tid": run time and run-queue wait
	visible  bool                        // cpu and procs are known
}

// sampleWork samples the server's work, and p's (nil for none).
func sampleWork(s *mcptest.Session, p *mcptest.Pending) workSample {
	w := workSample{at: time.Now()}
	if p != nil {
		w.progress, w.answered = p.Progress(), responded(p)
	}
	w.cpu, w.procs, w.threads, w.visible = processTree(s.PID())
	return w
}

// signature is what the Slow call looks like while it works.
type signature struct {
	progressEvery time.Duration  // the mean interval of its progress; 0 if it sent none
	cpuShare      float64        // CPU time per wall-clock time; -1 if unknown
	procs         map[int]string // the processes it started
}

func (g signature) String() string {
	var parts []string
	if g.progressEvery > 0 {
		parts = append(parts, fmt.Sprintf("progress every %v", g.progressEvery.Round(time.Millisecond)))
	} else {
		parts = append(parts, "no progress")
	}
	if g.cpuShare >= 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% CPU", 100*g.cpuShare))
	}
	if len(g.procs) > 0 {
		parts = append(parts, fmt.Sprintf("%d processes started", len(g.procs)))
	}
	return strings.Join(parts, ", ")
}

// observe watches p work for up to window, or until it has sent three
// progress notifications, and returns its signature; from is a sample taken
// before p was sent.
func observe(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, from workSample, window time.Duration) signature {
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	for p.Progress() < 3 && !ended(p) {
		// Progress and CPU time are state with no event to wait on.
		if bound.Pass(ctx, 5*time.Millisecond) != nil {
			break
		}
	}
	return signatureOf(from, sampleWork(s, p))
}

// waitCap bounds how much run-queue wait demand counts per unit of a
// thread's run time in a window.
const waitCap = 32

// demand is the CPU the server wanted between two samples: its CPU time,
// plus each thread's wait on a run queue, up to waitCap times the time the
// thread ran. A busy thread that a loaded machine gives a twentieth of a
// core waits the rest, and so still counts as busy; an idle runtime thread
// that wakes now and then, and may wait long on a loaded machine for its few
// microseconds of run, barely counts.
func demand(from, to workSample) time.Duration {
	d := to.cpu - from.cpu
	for k, t := range to.threads {
		f := from.threads[k]
		if run, wait := t[0]-f[0], t[1]-f[1]; run > 0 && wait > 0 {
			d += min(wait, waitCap*run)
		}
	}
	return d
}

func signatureOf(from, to workSample) signature {
	g := signature{cpuShare: -1}
	d := to.at.Sub(from.at)
	if n := to.progress - from.progress; n > 0 {
		g.progressEvery = d / time.Duration(n)
	}
	if from.visible && to.visible && d > 0 {
		g.cpuShare = float64(demand(from, to)) / float64(d)
		g.procs = newProcs(from.procs, to.procs)
	}
	return g
}

// newProcs returns the processes in to that are not in from.
func newProcs(from, to map[int]string) map[int]string {
	out := map[int]string{}
	for pid, cmd := range to {
		if _, old := from[pid]; !old {
			out[pid] = cmd
		}
	}
	return out
}

// CPU use is judged against the call's own at work, measured on the same
// machine, as demand (see demand), which a load that changes between the
// two windows does not change much. Work went on if the server kept half its working share (and at
// least 5% of a core: an idle process uses next to none); it stopped if the
// share fell by four fifths from at least 10%. Without a working share to
// compare, only a quarter of a core counts as work.
func cpuWentOn(working, after float64) bool {
	if working < 0.10 {
		return after >= 0.25
	}
	return after >= max(0.05, working/2)
}

func cpuStopped(working, after float64) bool {
	return working >= 0.10 && after >= 0 && after < working/5
}

func invisibleWhy(s *mcptest.Session) string {
	if s.PID() == 0 {
		return "an in-process server"
	}
	return "no /proc here"
}
