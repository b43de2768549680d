package assertions

import (
	"context"
	"fmt"
	"runtime"
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
		atLimit bool
		how     string
	)
	if r.command != nil {
		o := r.work(ctx, r.cfg.Cap, nil)
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
		atLimit, how = o.atLimit, o.how()
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
			atLimit = true
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
		// The fake still runs: give its report a moment to show the
		// stdin's end or the signals it got.
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		r.waitReport(wctx, func(rep fakeserver.Report) bool { return rep.EOF || len(rep.Signals) > 0 })
		cancel()
	}
	rep, _ := r.fakeReport()
	steps := ladderSteps(rep, t0)
	if atLimit {
		limit := fmt.Sprintf("%v after Close began (the harness's bound: HostConfig.Cap, -host-cap)", r.cfg.Cap)
		if r.command != nil {
			limit = fmt.Sprintf("%v after it started (the harness's bound: HostConfig.Cap and Within for its start, -host-cap and -within)", r.cfg.Cap+r.cfg.Within)
		}
		return fail(ruleHostShutdown, "the host was still running, ending a server that ignores stdin's end and SIGTERM, %s; what the server got: %s", limit, steps)
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
