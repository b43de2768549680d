package assertions

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cancelrule"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// cancelResult turns the cancel rule's outcome into a criterion's Result: work
// that went on fails, work that stopped and was answered anyway warns under
// the cancel rule of the session's era, and an unverified outcome warns
// under the evidence rule.
func cancelResult(s *mcptest.Session, o cancelrule.Outcome) Result {
	era := s.ProtocolVersion()
	switch o.Verdict {
	case cancelrule.WentOn:
		return Result{Verdict: Fail, Rule: cancelRule(era), Evidence: o.Evidence, Details: s.Diagnose()}
	case cancelrule.StoppedAnswered:
		return Result{Verdict: Warn, Rule: cancelRule(era), Evidence: o.Evidence}
	case cancelrule.Stopped:
		return pass("%s", o.Evidence)
	}
	r := Result{Verdict: Warn, Rule: ruleCancelEvidence, Evidence: o.Evidence}
	if o.Response == nil {
		r.Evidence += "; set SlowDuration to watch for a late response for as long as the call lasts"
	}
	return r
}

// watchCancel cancels p after the criterion's grace and watches it, as
// cfg says.
func watchCancel(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig, before cancelrule.Baseline) (*cancelrule.Seen, error) {
	return cancelrule.Watch(ctx, s, p, before, cancelrule.Config{Grace: cfg.CancelGrace, Watch: cfg.cancelWatch(), Reason: "mcpstdio: cancel criterion"})
}

// tokens numbers the progress tokens the criteria give their requests.
var tokens atomic.Int64

// newProgressToken returns a progress token no other request of this
// process carries, so progress can be attributed to its request.
func newProgressToken() string { return fmt.Sprintf("mcpstdio-%d", tokens.Add(1)) }

// baselineWindow is how long the cancel criteria watch the server before
// they send the call, for its own background CPU demand: twice the grace.
func (c ServerConfig) baselineWindow() time.Duration { return 2 * c.CancelGrace }

// calibrationWindow bounds how long a criterion watches the Slow call at
// work before it cancels.
func (c ServerConfig) calibrationWindow() time.Duration { return min(c.Within, 10*c.CancelGrace) }

// CheckCancelStopsWork watches p, a request at work, for a while (until it
// has sent three progress notifications, or min(Within, 10×CancelGrace)),
// to learn what its work looks like; then cancels it, lets CancelGrace
// pass, watches on (SlowDuration, see ServerConfig) and judges whether the
// work stopped.
//
// The judgement is package cancelrule's: work that went on fails; work
// that stopped passes, or warns when the request was answered anyway (a
// SHOULD NOT before the 2026-07-28 revision, a MUST NOT on its stdio
// transport); when nothing shows the work either way (no progress, no CPU
// use above the server's own, no processes, unknown duration), the verdict
// is a warning that says "unverified", never "stopped". Processes the
// server already ran when CheckCancelStopsWork was called are not taken
// for the call's.
func CheckCancelStopsWork(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig) Result {
	return cancelStopsWork(ctx, s, p, cfg.withDefaults(), cancelrule.Measure(ctx, s, 0))
}

// cancelStopsWork is CheckCancelStopsWork with a sample from before p was
// sent.
func cancelStopsWork(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig, before cancelrule.Baseline) Result {
	g := cancelrule.Observe(ctx, s, p, before, cfg.calibrationWindow())
	switch {
	case responded(p):
		return fail(ruleCancelEvidence, "the call finished before it could be cancelled (%s): configure a slower call", g)
	case ended(p):
		_, err := p.Wait(ctx)
		return failErr("", "the call failed before it could be cancelled", err)
	}
	c, err := watchCancel(ctx, s, p, cfg, before)
	if err != nil {
		return failErr("", "cancelling the call", err)
	}
	res := cancelResult(s, c.Judge(g, cfg.SlowDuration))
	if res.Verdict == Pass {
		res.Evidence = fmt.Sprintf("at work (%s), cancelled: %s", g, res.Evidence)
	}
	return res
}

// AssertCancelStopsWork is CheckCancelStopsWork for tests.
func AssertCancelStopsWork(t testing.TB, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig) {
	t.Helper()
	report(t, CheckCancelStopsWork(testContext(t), s, p, cfg))
}

// CheckCancelDuringWork sends the Slow call with a progress token, lets it
// work, cancels it (see CheckCancelStopsWork), and checks that a second
// request completes.
func CheckCancelDuringWork(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	if cfg.Slow == nil {
		return skip("no Slow tool call configured (ServerConfig.Slow)")
	}
	p, before := sendSlow(ctx, s, cfg)
	return thenSecondRequest(ctx, s, cfg, cancelStopsWork(ctx, s, p, cfg, before))
}

// sendSlow sends the Slow call with a fresh progress token, and returns it
// with a sample of the server's work from just before.
func sendSlow(ctx context.Context, s *mcptest.Session, cfg ServerConfig) (*mcptest.Pending, cancelrule.Baseline) {
	before := cancelrule.Measure(ctx, s, cfg.baselineWindow())
	return s.Send(wire.MethodToolsCall, cfg.Slow.params(newProgressToken())), before
}

// thenSecondRequest makes the second request after a cancel criterion and
// adds what happened to res: a pass that is not followed by an answer is a
// failure; another verdict keeps its own and says so.
func thenSecondRequest(ctx context.Context, s *mcptest.Session, cfg ServerConfig, res Result) Result {
	err := checkCheap(ctx, s, cfg.Within, cfg.Cheap)
	switch {
	case err != nil && res.Verdict == Pass:
		return failErr(ruleSecondRequest, "second request after the cancel ("+res.Evidence+")", err)
	case err != nil:
		res.Evidence += "; the second request then got no answer: " + firstLine(err.Error())
	case res.Verdict == Pass:
		res.Evidence += "; the second request completed"
	}
	return res
}

// AssertCancelDuringWork is CheckCancelDuringWork for tests.
func AssertCancelDuringWork(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckCancelDuringWork(testContext(t), s, cfg))
}

// CheckCancelBeforeWork sends the Slow call and notifications/cancelled
// right behind it, before the server can have done any work worth speaking
// of, and watches, as CheckCancelStopsWork does, that no work follows. The
// first call's silence is evidence only where work is visible: when the
// watch shows the work stopped, or nothing either way, it then sends the
// Slow call again, watches it at work for a while and cancels it too, to
// know what the work would have looked like. A second request must
// complete.
func CheckCancelBeforeWork(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	if cfg.Slow == nil {
		return skip("no Slow tool call configured (ServerConfig.Slow)")
	}
	p, before := sendSlow(ctx, s, cfg)
	c, err := watchCancel(ctx, s, p, cfg, before)
	if err != nil {
		return failErr("", "cancelling the call right behind it", err)
	}
	// The signature, from a call left to work, is needed only if nothing
	// showed the first call going on.
	g := cancelrule.Unknown()
	if o := c.Judge(g, cfg.SlowDuration); o.Verdict == cancelrule.Stopped || o.Verdict == cancelrule.Unverified {
		from := cancelrule.Measure(ctx, s, cfg.baselineWindow())
		q := s.Send(wire.MethodToolsCall, cfg.Slow.params(newProgressToken()))
		g = cancelrule.Observe(ctx, s, q, from, cfg.calibrationWindow())
		if !ended(q) {
			_ = q.Cancel("mcpstdio: the cancel criterion's second call")
		}
	}
	res := cancelResult(s, c.Judge(g, cfg.SlowDuration))
	if res.Verdict == Pass {
		res.Evidence += fmt.Sprintf(" (the call at work: %s)", g)
	}
	return thenSecondRequest(ctx, s, cfg, res)
}

// AssertCancelBeforeWork is CheckCancelBeforeWork for tests.
func AssertCancelBeforeWork(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckCancelBeforeWork(testContext(t), s, cfg))
}

// isErrorResult reports whether a tools/call result says isError.
func isErrorResult(result json.RawMessage) bool {
	return string(wire.Member(result, "isError")) == "true"
}

// roundMS writes d to the millisecond, or "under 1ms".
func roundMS(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1ms"
	}
	return d.Round(time.Millisecond).String()
}
