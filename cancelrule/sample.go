package cancelrule

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// sample is what can be seen of the server's work at one moment.
type sample struct {
	at       time.Time
	progress int64 // progress notifications for the request
	answered bool  // its response has arrived
	cpu      time.Duration
	procs    map[int]string              // the server's live descendants
	threads  map[string][2]time.Duration // "pid/tid": run time and run-queue wait
	visible  bool                        // cpu and procs are known
}

// take samples the server's work, and p's (nil for none).
func take(s *mcptest.Session, p *mcptest.Pending) sample {
	w := sample{at: time.Now()}
	if p != nil {
		w.progress, w.answered = p.Progress(), responded(p)
	}
	w.cpu, w.procs, w.threads, w.visible = processTree(s.PID())
	return w
}

// Baseline is what the server was doing before a call was sent: the
// processes it already ran (so that they are not taken for the call's), its
// CPU time, from which the call's CPU demand is counted, and its own
// background CPU demand (a language server indexing, a runtime's
// collector), against which the call's demand is judged. Take it with
// Measure just before the call is sent.
type Baseline struct {
	// Background is the server's CPU demand over Window before the call, in
	// CPUs (run time plus run-queue wait per wall-clock second); -1 where it
	// was not measured (a zero window) or cannot be seen (an in-process
	// server, no /proc).
	Background float64
	// Window is how long the background was measured.
	Window time.Duration
	from   sample
}

// Measure watches the server for window and returns its Baseline: what it
// ran and how much CPU it used with no call of the caller's in flight. It
// blocks for window, less if ctx ends first, and not at all with a zero
// window or where the server's CPU cannot be seen (Background is then -1).
// CPU demand counts as a call's work only above the background; a window
// of at least a few hundred milliseconds tells a server's steady background
// work (an index being built) from a moment's.
func Measure(ctx context.Context, s *mcptest.Session, window time.Duration) Baseline {
	from := take(s, nil)
	b := Baseline{Background: -1, from: from}
	if !from.visible || window <= 0 || bound.Pass(ctx, window) != nil {
		return b
	}
	to := take(s, nil)
	if d := to.at.Sub(from.at); to.visible && d > 0 {
		b.Background, b.Window = float64(demand(from, to))/float64(d), d
	}
	b.from = to
	return b
}

// Signature is what a call looks like while it works, as Observe sees it.
type Signature struct {
	// ProgressEvery is the mean interval of its progress notifications; 0
	// if it sent none.
	ProgressEvery time.Duration
	// Demand is the server's CPU demand while the call worked, in CPUs (run
	// time plus run-queue wait per wall-clock second); -1 where it cannot be
	// seen (an in-process server, no /proc).
	Demand float64
	// Procs are the processes the server started for the call, by pid,
	// with their command lines.
	Procs map[int]string
}

// String says what the call looked like: "progress every 50ms, 31% CPU, 1
// processes started".
func (g Signature) String() string {
	var parts []string
	if g.ProgressEvery > 0 {
		parts = append(parts, fmt.Sprintf("progress every %v", g.ProgressEvery.Round(time.Millisecond)))
	} else {
		parts = append(parts, "no progress")
	}
	if g.Demand >= 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% CPU", 100*g.Demand))
	}
	if n := len(g.Procs); n == 1 {
		parts = append(parts, "1 process started")
	} else if n > 1 {
		parts = append(parts, fmt.Sprintf("%d processes started", n))
	}
	return strings.Join(parts, ", ")
}

// unknown is the signature of a call that was not seen at work.
var unknown = Signature{Demand: -1}

// Unknown returns the Signature of a call that was not seen at work (no
// progress, CPU demand unknown, no processes): judged against it, only
// evidence of work going on counts.
func Unknown() Signature { return unknown }

// Observe watches p, a call at work, for up to window, or until it has
// sent three progress notifications or ended, and returns its Signature. b
// is the server's Baseline from before p was sent. It blocks for at most
// window, less if ctx ends first.
func Observe(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, b Baseline, window time.Duration) Signature {
	ctx, cancel := context.WithTimeout(ctx, window)
	defer cancel()
	for p.Progress() < 3 && !ended(p) {
		// Progress and CPU time are state with no event to wait on.
		if bound.Pass(ctx, 5*time.Millisecond) != nil {
			break
		}
	}
	return signatureOf(b.from, take(s, p))
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
func demand(from, to sample) time.Duration {
	d := to.cpu - from.cpu
	for k, t := range to.threads {
		f := from.threads[k]
		if run, wait := t[0]-f[0], t[1]-f[1]; run > 0 && wait > 0 {
			d += min(wait, waitCap*run)
		}
	}
	return d
}

func signatureOf(from, to sample) Signature {
	g := Signature{Demand: -1}
	d := to.at.Sub(from.at)
	if n := to.progress - from.progress; n > 0 {
		g.ProgressEvery = d / time.Duration(n)
	}
	if from.visible && to.visible && d > 0 {
		g.Demand = float64(demand(from, to)) / float64(d)
		g.Procs = newProcs(from.procs, to.procs)
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

// procList writes processes as "pid 12 (cmd), pid 13 (cmd)", by pid.
func procList(procs map[int]string) string {
	var ps []string
	for _, pid := range slices.Sorted(maps.Keys(procs)) {
		ps = append(ps, fmt.Sprintf("pid %d (%s)", pid, procs[pid]))
	}
	return strings.Join(ps, ", ")
}

// CPU use is judged against the call's own at work, measured on the same
// machine, as demand (see demand), which a load that changes between the
// two windows does not change much, and above the server's background
// (Baseline.Background; 0 where unknown): the call's share at work is its
// demand less the background, and so is its share after the grace. Work
// went on if the call kept half its working share, and more than the
// background's noise; it stopped if the share fell by four fifths from at
// least 10% of a core that stood out from that noise. Without a working
// share to compare, only a quarter of a core above the background counts
// as work.
//
// The noise is 5% of a core for an idle server (an idle process uses next
// to none), and twice the background for one that uses a little. A server
// that uses a tenth of a core or more of its own makes the call's share
// unknowable: measured on a 2-core machine at load 19, the quiet test
// server burning 0.6 of a CPU of its own, call or no call, showed up to
// 3.6 times the background measured just before, with no call's work in
// it, and a language server indexing its workspace (gopls) 294% after a
// cancel against 830% before the call. CPU then decides nothing: the
// progress, the processes and the answer do, and without them the verdict
// is unverified, naming both rates.
type cpuRule struct {
	working, after, background float64 // in CPUs; working and after -1 where unknown
}

func (r cpuRule) noise() float64 { return max(0.05, 2*r.background) }

// call returns a demand less the background.
func (r cpuRule) call(d float64) float64 { return d - max(0, r.background) }

// told reports whether the call's CPU can be told from the server's own.
func (r cpuRule) told() bool { return r.background < 0.10 }

func (r cpuRule) wentOn() bool {
	if r.after < 0 || !r.told() {
		return false
	}
	if r.working < 0 || r.call(r.working) < 0.10 {
		return r.call(r.after) >= max(0.25, r.noise())
	}
	return r.call(r.after) >= max(r.noise(), r.call(r.working)/2)
}

func (r cpuRule) stopped() bool {
	w := r.call(r.working)
	return r.told() && r.working >= 0 && r.after >= 0 && w >= max(0.10, r.noise()) && r.call(r.after) < w/5
}

// masked reports whether the server's own background could hide the
// call's work: the same demand with no background would have counted.
func (r cpuRule) masked() bool {
	if r.background < 0.05 || r.after < 0 {
		return false
	}
	bare := cpuRule{working: r.working, after: r.after}
	return bare.wentOn() && !r.wentOn() || bare.stopped() && !r.stopped()
}

func invisibleWhy(s *mcptest.Session) string {
	if s.PID() == 0 {
		return "an in-process server"
	}
	return "no /proc here"
}

// ended reports whether p has ended: answered, or failed.
func ended(p *mcptest.Pending) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// responded reports whether p's response has arrived (not merely whether
// p has ended: a failed write or a closed session ends it too).
func responded(p *mcptest.Pending) bool {
	if !ended(p) {
		return false
	}
	r, err := p.Wait(context.Background())
	return err == nil && r != nil
}
