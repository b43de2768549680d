package assertions

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ruleHostHandshake is handshake-timeout's rule: the timeouts of the
// lifecycle apply to initialize as to any request (SHOULD: a timeout, and
// notifications/cancelled when it fires — no cancel is a warning), and a
// host that gives up must report it (an error, or a non-zero exit; exit 0
// is a warning unless the host command's ExpectOutput, the line of a
// session that worked, is given: then its absence is the report, and its
// presence a failure). A host still waiting at the harness's bound fails:
// that it waited so long is the evidence.
const ruleHostHandshake = "a host bounds the handshake with a timeout of its own, SHOULD send notifications/cancelled for the initialize it gives up on, and reports the failure (an error, a non-zero exit, or output without the line of a session that worked)"

// hostHandshakeTimeout is handshake-timeout: the fake never answers
// initialize or server/discover.
func hostHandshakeTimeout(ctx context.Context, r *hostFixture) Result {
	var o hostOutcome
	limit := fmt.Sprintf("the harness's bound: %v, HostConfig.Cap, -host-cap", r.cfg.Cap)
	if r.command != nil {
		limit = fmt.Sprintf("the harness's bound: %v, HostConfig.Cap and Within for its start, -host-cap and -within", r.cfg.Cap+r.cfg.Within)
		if err := r.startWith(ctx, "-no-handshake"); err != nil {
			return hostStartFailed(err)
		}
		o = r.waitCommand(ctx, r.cfg.Cap+r.cfg.Within) // a start-up allowance, as work's
	} else {
		o = r.startUnanswered(ctx)
	}
	if r.command == nil || !r.run.killed {
		wctx, cancel := context.WithTimeout(ctx, min(r.cfg.Within, 2*time.Second))
		r.waitReport(wctx, func(rep fakeserver.Report) bool { return rep.Exit != "" || len(rep.Cancels) > 0 })
		cancel()
	}
	rep, _ := r.fakeReport()
	var asked []fakeserver.RequestRecord
	for _, q := range rep.Requests {
		if q.Method == wire.MethodInitialize || q.Method == wire.MethodDiscover {
			asked = append(asked, q)
		}
	}
	if len(asked) == 0 {
		if o.atLimit {
			return fail(ruleHostHandshake, "the host sent no initialize or server/discover and was still running %v later (%s)", o.took.Round(time.Millisecond), limit)
		}
		return skip("the host sent no initialize or server/discover (it needs no handshake, or did not start the server); it ended: %s", o.how())
	}
	var names []string
	for _, q := range asked {
		names = append(names, fmt.Sprintf("%s (id %s)", q.Method, q.ID))
	}
	fault := "the fake never answered " + strings.Join(names, ", ")
	first := asked[0].Arrived
	if o.atLimit {
		return fail(ruleHostHandshake, "%s: the host was still waiting %v after the first (%s): no handshake timeout of its own fired", fault, o.ended.Sub(first).Round(time.Millisecond), limit)
	}
	var facts, warns []string
	facts = append(facts, fmt.Sprintf("the host %s %v after the first (%s)", r.gaveUp(), o.ended.Sub(first).Round(time.Millisecond), o.how()))
	var cancels []string
	for _, q := range asked {
		if c, ok := cancelOf(rep, q.ID); ok {
			cancels = append(cancels, fmt.Sprintf("%s after %v (reason %q)", q.Method, c.Arrived.Sub(q.Arrived).Round(time.Millisecond), c.Reason))
		}
	}
	if len(cancels) > 0 {
		facts = append(facts, "sent notifications/cancelled for "+strings.Join(cancels, ", "))
	} else {
		warns = append(warns, "sent no notifications/cancelled for it")
	}
	switch {
	case r.command == nil && o.err == nil:
		if slices.ContainsFunc(asked, func(q fakeserver.RequestRecord) bool { return q.Method == wire.MethodInitialize }) {
			return fail(ruleHostHandshake, "%s: the HostFactory returned a host and no error, %v after it: the failure was not reported", fault, o.ended.Sub(first).Round(time.Millisecond))
		}
		warns = append(warns, "the HostFactory returned a host and no error: unverified whether it noticed")
	case r.command != nil && o.exit == exitZero && r.command.ExpectOutput == nil:
		warns = append(warns, "exited 0: the failure is in its output at most (give -expect-output, HostCommand.ExpectOutput, the line it prints when connected)")
	case r.command != nil && o.exit == exitZero && r.command.ExpectOutput.MatchString(o.output):
		return fail(ruleHostHandshake, "%s: the host exited 0 and its output matches %q, the line of a session that worked: the failure was not reported; %s", fault, r.command.ExpectOutput, strings.Join(facts, "; "))
	case r.command != nil && o.exit == exitZero:
		facts = append(facts, fmt.Sprintf("exited 0 without the line of a session that worked (%q): the failure was reported, its last line %q", r.command.ExpectOutput, lastLine(o.output)))
	}
	evidence := fault + ": " + strings.Join(append(facts, warns...), "; ")
	if len(warns) > 0 {
		return Result{Verdict: Warn, Rule: ruleHostHandshake, Evidence: evidence}
	}
	return pass("%s", evidence)
}

// startUnanswered starts a Go Host against the fake with -no-handshake: its
// context has no deadline (the host's own bound is what is judged), and the
// criterion gives up at HostConfig.Cap.
func (r *hostFixture) startUnanswered(ctx context.Context) hostOutcome {
	r.report = r.reportPattern()
	cmd, err := fakeCommand(r.ctx, "-report", r.report, "-no-handshake")
	if err != nil {
		return hostOutcome{err: err, ended: time.Now()}
	}
	r.cmd = cmd
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	begin := time.Now()
	done := goAdapter("the HostFactory", func() (Host, error) { return r.newHost(hctx, cmd) })
	// The cap counts from the first handshake request the fake read (a
	// slow start of the fake is not the host's wait), once that came within
	// StartTimeout.
	t := time.NewTimer(r.cfg.Cap)
	defer t.Stop()
wait:
	for {
		select {
		case s := <-done:
			r.keep(s.v)
			o := hostOutcome{err: s.err, ended: time.Now()}
			o.took = o.ended.Sub(begin)
			return o
		case <-t.C:
		}
		rep, _ := r.fakeReport()
		switch {
		case len(rep.Requests) > 0 && time.Since(rep.Requests[0].Arrived) < r.cfg.Cap:
			t.Reset(r.cfg.Cap - time.Since(rep.Requests[0].Arrived))
		case len(rep.Requests) == 0 && time.Since(begin) < r.cfg.StartTimeout:
			t.Reset(100 * time.Millisecond)
		default:
			break wait
		}
	}
	o := hostOutcome{atLimit: true, ended: time.Now()}
	o.took = o.ended.Sub(begin)
	cancel()
	r.kill()
	late := time.NewTimer(r.cfg.Within)
	defer late.Stop()
	select {
	case s := <-done:
		r.keep(s.v)
	case <-late.C:
		o.hung = true // its goroutine is left to the factory
	}
	return o
}
