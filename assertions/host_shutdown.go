package assertions

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

// ruleHostShutdown is shutdown-ladder's rule. The specification's stdio
// shutdown (lifecycle, 2024-11-05 to 2026-07-28) is a SHOULD: close the
// server's stdin, wait for it to exit, SIGTERM if it does not, SIGKILL if
// it still does not. So a host that signals first, or skips a rung, gets a
// warning. A server still running after its host is gone is a failure: the
// ladder's every rung exists so that the server ends, and an orphan is the
// leak (files, ports, memory) its last rung prevents.
const ruleHostShutdown = "a host SHOULD end its server by closing its stdin, waiting, then SIGTERM, then SIGKILL (stdio shutdown); it MUST NOT leave the server running once it is gone"

// hostShutdownLadder is shutdown-ladder: the fake ignores stdin's end and
// SIGTERM (SIGINT and SIGHUP too), so that only an escalation ends it, and
// records when stdin ended and each signal; the host ends as it does (a
// command exits, a Go Host is closed), within HostConfig.Cap.
func hostShutdownLadder(ctx context.Context, r *hostFixture) Result {
	if runtime.GOOS != "linux" {
		return skip("whether a server outlives its host is read from /proc, which %s does not have", runtime.GOOS)
	}
	if err := r.startWith(ctx, "-ignore-eof", "-ignore-sigterm"); err != nil {
		return hostStartFailed(err)
	}
	var (
		t0      time.Time
		left    []leftProc
		atLimit string // the bound the harness ran out of, if it did
		how     string
	)
	if r.command != nil {
		o, first := r.waitShutdown(ctx)
		// The fake writes its report on a goroutine of its own, which a
		// loaded machine can leave behind the host's exit: wait until the
		// report shows the fake ended, or what it got from its host (a fake
		// the host left running sees at least its stdin's end).
		r.waitReport(ctx, func(rep fakeserver.Report) bool { return fakeEnded(rep) || rep.EOF || len(rep.Signals) > 0 })
		// The servers it left: the fakes among what ran on after it
		// (anything else it left is named when the criterion closes).
		pids := map[int]bool{}
		for _, f := range r.reportFiles() {
			if rep, err := fakeserver.ReadReportFile(f); err == nil {
				pids[rep.PID] = true
			}
		}
		for _, p := range r.run.left {
			if pids[p.id.PID] {
				left = append(left, p)
			}
		}
		for _, p := range r.fakeIDs() { // running still, so at its exit too
			if !slices.ContainsFunc(left, func(l leftProc) bool { return l.id == p.id }) {
				left = append(left, p)
			}
		}
		how = o.how()
		switch {
		case !o.atLimit:
		case first.IsZero():
			atLimit = fmt.Sprintf("had not begun ending its server (no stdin close, no signal) %v after it started (the harness's bound: %v, HostConfig.Cap plus Within for its start, -host-cap and -within); the criterion killed the host with its process group",
				o.took.Round(time.Millisecond), r.cfg.Cap+r.cfg.Within)
		default:
			atLimit = fmt.Sprintf("was still running %v after it began ending a server that ignores stdin's end and SIGTERM (the harness's bound: %v after the first step, HostConfig.Cap, -host-cap); the criterion killed the host with its process group",
				o.ended.Sub(first).Round(time.Millisecond), r.cfg.Cap)
		}
	} else {
		if err := r.waitReport(ctx, func(rep fakeserver.Report) bool { return rep.PID > 0 }); err != nil {
			return failErr(ruleHostShutdown, "waiting for the fake's pid", err)
		}
		fakes := r.fakeIDs()
		h := r.host
		r.host = nil // closed here, with the cap as its bound
		t0 = time.Now()
		done := goAdapter("the host's Close", func() (struct{}, error) { return struct{}{}, h.Close() })
		t := time.NewTimer(r.cfg.Cap)
		select {
		case o := <-done:
			how = fmt.Sprintf("Close returned after %v", time.Since(t0).Round(time.Millisecond))
			if o.err != nil {
				how += " " + truncate(firstLine(o.err.Error()), 200)
			}
		case <-t.C:
			atLimit = fmt.Sprintf("was still running, ending a server that ignores stdin's end and SIGTERM, %v after Close began (the harness's bound: HostConfig.Cap, -host-cap)", r.cfg.Cap)
			r.kill()
			late := time.NewTimer(r.cfg.Within)
			select {
			case <-done:
			case <-late.C:
			}
			late.Stop()
		}
		t.Stop()
		for _, p := range fakes {
			if p.id.Running() {
				left = append(left, p)
			}
		}
	}
	if len(left) > 0 {
		// The fake still runs: its report shows stdin's end or the
		// signals it got once it has taken them in (bounded by Within).
		r.waitReport(ctx, func(rep fakeserver.Report) bool { return rep.EOF || len(rep.Signals) > 0 })
	}
	rep, _ := r.fakeReport()
	steps := ladderSteps(rep, t0)
	if atLimit != "" {
		return fail(ruleHostShutdown, "the host %s; what the server got: %s", atLimit, steps)
	}
	if len(left) > 0 {
		end(left)
		return fail(ruleHostShutdown, "orphaned: the host ended (%s) and left %s running; what the server got: %s; the criterion killed it", how, describe(left), steps)
	}
	if rep.Exit != "" {
		return Result{Verdict: Warn, Rule: ruleHostShutdown, Evidence: fmt.Sprintf("unverified: the fake ended by itself (%s) though it ignores stdin's end and SIGTERM; what it got: %s", rep.Exit, steps)}
	}
	gone := "then it was killed by a signal it cannot catch (SIGKILL)"
	if n := len(rep.Signals); n > 0 && rep.Signals[n-1].Name == "SIGQUIT" {
		gone = "SIGQUIT ended it"
	}
	var firstSig time.Time
	sigterm := false
	for _, s := range rep.Signals {
		if firstSig.IsZero() {
			firstSig = s.At
		}
		sigterm = sigterm || s.Name == "SIGTERM"
	}
	warn := func(format string, args ...any) Result {
		return Result{Verdict: Warn, Rule: ruleHostShutdown, Evidence: fmt.Sprintf(format, args...)}
	}
	switch {
	case rep.EOFAt.IsZero() && firstSig.IsZero():
		return warn("the host killed its server outright: no stdin close, no SIGTERM (%s); the host ended: %s", gone, how)
	case rep.EOFAt.IsZero() || (!firstSig.IsZero() && firstSig.Before(rep.EOFAt)):
		return warn("signal first: %s; %s; the host ended: %s", steps, gone, how)
	case !sigterm:
		return warn("no SIGTERM: %s; %s", steps, gone)
	}
	return pass("%s; %s; no server process left after the host ended (%s)", steps, gone, how)
}

// waitShutdown waits for a host command to end by itself while the fake
// ignores stdin's end and SIGTERM. The cap counts from the first step of
// the ladder the fake saw (stdin's end or a signal), not from the host's
// start, so that a slow start (a loaded machine) is not taken for a slow
// shutdown; while no step is seen, the host gets the cap and Within for its
// start, as work gives. The fake's report is a file with no notification
// to wait on: it is read every few milliseconds until it shows a step. It
// returns how the host ended and the first step's time (zero if the fake
// saw none).
func (r *hostFixture) waitShutdown(ctx context.Context) (hostOutcome, time.Time) {
	run := r.run
	var first time.Time
	deadline := time.NewTimer(time.Until(run.begin.Add(r.cfg.Cap + r.cfg.Within)))
	defer deadline.Stop()
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for !run.killed {
		select {
		case <-run.done:
			return r.commandOutcome(), first
		case <-ctx.Done():
			run.killed = true
		case <-deadline.C:
			run.killed = true
		case <-poll.C:
			if rep, err := r.fakeReport(); err == nil && !firstStep(rep).IsZero() {
				first = firstStep(rep)
				poll.Stop()
				deadline.Reset(time.Until(first.Add(r.cfg.Cap)))
			}
		}
	}
	return r.commandOutcome(), first
}

// firstStep is when the fake saw the first step of its host's shutdown:
// stdin's end or a signal; zero if neither.
func firstStep(rep fakeserver.Report) time.Time {
	first := rep.EOFAt
	for _, s := range rep.Signals {
		if first.IsZero() || s.At.Before(first) {
			first = s.At
		}
	}
	return first
}

// ladderSteps lists when the fake's stdin ended and each signal it got,
// relative to t0, or to the first of them if t0 is zero.
func ladderSteps(rep fakeserver.Report, t0 time.Time) string {
	type step struct {
		what string
		at   time.Time
	}
	var steps []step
	if !rep.EOFAt.IsZero() {
		steps = append(steps, step{"stdin closed", rep.EOFAt})
	}
	for _, s := range rep.Signals {
		what := s.Name
		if s.Ignored {
			what += " (ignored)"
		}
		steps = append(steps, step{what, s.At})
	}
	if len(steps) == 0 {
		return "neither stdin's end nor a signal it can catch"
	}
	for i := 1; i < len(steps); i++ { // in time order
		for j := i; j > 0 && steps[j].at.Before(steps[j-1].at); j-- {
			steps[j], steps[j-1] = steps[j-1], steps[j]
		}
	}
	if t0.IsZero() {
		t0 = steps[0].at
	}
	var b []string
	for _, s := range steps {
		b = append(b, fmt.Sprintf("%s at +%v", s.what, s.at.Sub(t0).Round(time.Millisecond)))
	}
	return strings.Join(b, ", ")
}
