package assertions

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// cancelled is what was seen of a cancelled request: samples at the cancel,
// after the grace and at the end of the watch.
type cancelled struct {
	p                         *mcptest.Pending
	atCancel, afterGrace, end workSample
	grace, watch              time.Duration
	started                   map[int]string // processes the server started since the call was sent
	answeredIn                time.Duration  // when its response arrived after the cancel; -1 if it did not
	progressAtAnswer          int64          // progress notifications seen when it arrived
	rule                      *mcptest.Activity
}

// cancelAndWatch cancels p, lets the grace pass, then watches the work for
// cfg.cancelWatch(): a response does not end the watch, for the work must
// be judged first (a server may stop it and answer anyway), but once it has
// come, the server stopped by mcptest's rule ends it.
func cancelAndWatch(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig, before workSample) (cancelled, error) {
	c := cancelled{p: p, grace: cfg.CancelGrace, watch: cfg.cancelWatch(), answeredIn: -1}
	c.atCancel = sampleWork(s, p)
	at := time.Now()
	if err := p.Cancel("mcpstdio: cancel criterion"); err != nil {
		return c, err
	}
	type answer struct {
		in       time.Duration
		progress int64
	}
	answered := make(chan answer, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-p.Done():
			answered <- answer{time.Since(at), p.Progress()}
		case <-wctx.Done():
			answered <- answer{in: -1}
		}
	}()
	if err := bound.Pass(ctx, c.grace); err != nil {
		return c, err
	}
	c.afterGrace = sampleWork(s, p)
	rule := make(chan *mcptest.Activity, 1)
	go func() {
		a, err := s.WaitStopped(wctx)
		if err != nil {
			rule <- nil
			return
		}
		rule <- &a
	}()
	t := time.NewTimer(c.watch)
	defer t.Stop()
	done, stopped := p.Done(), rule
	isAnswered := false
watch:
	for {
		select {
		case <-done:
			done, isAnswered = nil, true
			if c.rule != nil {
				break watch
			}
		case a := <-stopped:
			stopped, c.rule = nil, a
			if a != nil && isAnswered {
				break watch
			}
		case <-t.C:
			break watch
		case <-ctx.Done():
			return c, ctx.Err()
		}
	}
	c.end = sampleWork(s, p)
	stop()
	if a := <-answered; a.in >= 0 && responded(p) {
		c.answeredIn, c.progressAtAnswer = a.in, a.progress
	}
	if c.end.visible && before.visible {
		c.started = newProcs(before.procs, c.end.procs)
	}
	return c, nil
}

// judge turns what was seen after a cancel into a verdict, with the
// signature g of the call at work.
func (c cancelled) judge(s *mcptest.Session, g signature, cfg ServerConfig, ctx context.Context) Result {
	era := s.ProtocolVersion()
	window := c.end.at.Sub(c.afterGrace.at)
	var went []string
	// One notification can be one written before the cancel and read late
	// (a loaded machine delays the host's reads by more than the grace):
	// work that sends progress often shows going on as more than one.
	// Progress that arrived before an answer after the grace was written
	// before it: only what came after the answer shows the work going on.
	from := c.afterGrace.progress
	if c.answeredIn > c.grace {
		from = max(from, c.progressAtAnswer)
	}
	if n := c.end.progress - from; n >= 2 || n == 1 && (g.progressEvery == 0 || 2*g.progressEvery > window) {
		went = append(went, fmt.Sprintf("%d progress notifications for id=%d arrived %v–%v after the cancel", n, c.p.ID(), c.grace, c.grace+window.Round(time.Millisecond)))
	}
	share := -1.0
	if c.end.visible && c.afterGrace.visible && window > 0 {
		share = float64(demand(c.afterGrace, c.end)) / float64(window)
		if cpuWentOn(g.cpuShare, share) {
			went = append(went, fmt.Sprintf("the server used %v of CPU (%.0f%%) in the %v after the grace", demand(c.afterGrace, c.end).Round(time.Millisecond), 100*share, window.Round(time.Millisecond)))
		}
	}
	if len(c.started) > 0 {
		var ps []string
		for _, pid := range slices.Sorted(maps.Keys(c.started)) {
			ps = append(ps, fmt.Sprintf("pid %d (%s)", pid, c.started[pid]))
		}
		went = append(went, fmt.Sprintf("processes it started for the call are still running %v after the cancel: %s", (c.grace+window).Round(time.Millisecond), strings.Join(ps, ", ")))
	}
	answer := ""
	if resp := c.response(ctx); resp != nil {
		answer = fmt.Sprintf("the cancelled request was answered %s after the cancel with %s", roundMS(c.answeredIn), responseKind(resp))
	}
	if resp := c.response(ctx); c.answeredIn > c.grace && resp != nil && resp.Error == nil && !isErrorResult(resp.Result) {
		went = append(went, fmt.Sprintf("the cancelled request was answered %s after the cancel with a result of %d bytes, not an error: its work ran to the end", roundMS(c.answeredIn), len(resp.Result)))
		answer = ""
	}
	if len(went) > 0 {
		r := Result{Verdict: Fail, Rule: cancelRule(era), Evidence: "work went on after notifications/cancelled: " + strings.Join(went, "; ")}
		if answer != "" {
			r.Evidence += "; " + answer
		}
		r.Details = s.Diagnose()
		return r
	}
	var stopped []string
	if g.progressEvery > 0 && window >= 3*g.progressEvery {
		stopped = append(stopped, fmt.Sprintf("no progress in the %v after the grace (at work it sent one every %v)", window.Round(time.Millisecond), g.progressEvery.Round(time.Millisecond)))
	}
	if cpuStopped(g.cpuShare, share) {
		stopped = append(stopped, fmt.Sprintf("its CPU use fell from %.0f%% to %.0f%%", 100*g.cpuShare, 100*share))
	}
	// Asleep is evidence only against work that showed itself at work.
	if c.rule != nil && (g.progressEvery > 0 || g.cpuShare >= 0.10 || len(g.procs) > 0) {
		stopped = append(stopped, "the server "+c.rule.String())
	}
	if len(g.procs) > 0 && c.end.visible && len(c.started) == 0 {
		stopped = append(stopped, fmt.Sprintf("none of the processes the call starts (%d while at work) is left running", len(g.procs)))
	}
	if answer == "" && cfg.SlowDuration > 0 && c.grace+window >= cfg.SlowDuration {
		stopped = append(stopped, fmt.Sprintf("no response within the Slow call's own duration (%v)", cfg.SlowDuration))
	}
	if answer != "" {
		// The specification allows the race of a cancel with the answer:
		// what is required is that the work stops; the answer is a SHOULD
		// NOT (a MUST NOT in 2026-07-28).
		must := "the specification says SHOULD NOT"
		if isModernEra(era) {
			must = "the 2026-07-28 stdio transport says MUST NOT"
		}
		if len(stopped) > 0 {
			return Result{Verdict: Warn, Rule: cancelRule(era), Evidence: fmt.Sprintf("the work stopped: %s; but %s — %s", strings.Join(stopped, "; "), answer, must)}
		}
		return Result{Verdict: Warn, Rule: ruleCancelEvidence, Evidence: fmt.Sprintf("unverified: %s (%s), and nothing showed whether the work stopped or went on: the call sent no progress and its CPU use could not be told from idle (%s)", answer, must, g)}
	}
	if len(stopped) > 0 {
		return pass("the work stopped: %s; no response", strings.Join(stopped, "; "))
	}
	why := []string{"the call sent no progress"}
	if !c.end.visible {
		why = append(why, "its CPU time and processes cannot be seen ("+invisibleWhy(s)+")")
	} else if g.cpuShare >= 0.10 && share >= 0 {
		why = append(why, fmt.Sprintf("its CPU use after the grace (%.0f%%) neither kept half of its use at work (%s) nor fell to a fifth of it", 100*share, g))
	} else {
		why = append(why, fmt.Sprintf("used little CPU at work (%s)", g))
	}
	return Result{Verdict: Warn, Rule: ruleCancelEvidence,
		Evidence: fmt.Sprintf("unverified: nothing arrived within %v of the cancel, but nothing showed the work running either: %s; set SlowDuration to watch for a late response for as long as the call lasts",
			(c.grace + window).Round(time.Millisecond), strings.Join(why, ", "))}
}

// response returns the cancelled request's response, if it came while
// watched; nil otherwise (never waiting for one).
func (c cancelled) response(ctx context.Context) *mcptest.Response {
	if c.answeredIn < 0 {
		return nil
	}
	resp, err := c.p.Wait(ctx)
	if err != nil {
		return nil
	}
	return resp
}

// roundMS writes d to the millisecond, or "under 1ms".
func roundMS(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1ms"
	}
	return d.Round(time.Millisecond).String()
}

// tokens numbers the progress tokens the criteria give their requests.
var tokens atomic.Int64

// newProgressToken returns a progress token no other request of this
// process carries, so progress can be attributed to its request.
func newProgressToken() string { return fmt.Sprintf("mcpstdio-%d", tokens.Add(1)) }

// calibrationWindow bounds how long a criterion watches the Slow call at
// work before it cancels.
func (c ServerConfig) calibrationWindow() time.Duration { return min(c.Within, 10*c.CancelGrace) }

// CheckCancelStopsWork watches p, a request at work, for a while (until it
// has sent three progress notifications, or min(Within, 10×CancelGrace)),
// to learn what its work looks like; then cancels it, lets CancelGrace
// pass, watches on (SlowDuration, see ServerConfig) and judges whether the
// work stopped.
//
// A cancel can be judged only by what shows the work: progress
// notifications for the request's token, the server's CPU time and the
// processes it started (Linux, child servers: /proc), and the response.
// Work that goes on shows in one of them; work that stopped shows as what
// was learned going quiet. When there is nothing to go quiet (no progress,
// no CPU use, no processes, unknown duration), the verdict is a warning
// that says "unverified", never "stopped". A response after the cancel
// fails in 2026-07-28 (MUST NOT) and warns before it (SHOULD NOT), as does
// work that went on. Processes the server already ran when
// CheckCancelStopsWork was called are not taken for the call's.
func CheckCancelStopsWork(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig) Result {
	return cancelStopsWork(ctx, s, p, cfg.withDefaults(), sampleWork(s, nil))
}

// cancelStopsWork is CheckCancelStopsWork with a sample from before p was
// sent.
func cancelStopsWork(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, cfg ServerConfig, before workSample) Result {
	g := observe(ctx, s, p, before, cfg.calibrationWindow())
	switch {
	case responded(p):
		return fail(ruleCancelEvidence, "the call finished before it could be cancelled (%s): configure a slower call", g)
	case ended(p):
		_, err := p.Wait(ctx)
		return failErr("", "the call failed before it could be cancelled", err)
	}
	c, err := cancelAndWatch(ctx, s, p, cfg, before)
	if err != nil {
		return failErr("", "cancelling the call", err)
	}
	res := c.judge(s, g, cfg, ctx)
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
	p, before := sendSlow(s, cfg)
	return thenSecondRequest(ctx, s, cfg, cancelStopsWork(ctx, s, p, cfg, before))
}

// sendSlow sends the Slow call with a fresh progress token, and returns it
// with a sample of the server's work from just before.
func sendSlow(s *mcptest.Session, cfg ServerConfig) (*mcptest.Pending, workSample) {
	before := sampleWork(s, nil)
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
// first call's silence is evidence only where work is visible: unless the
// watch already showed the work going on, it then sends the Slow call
// again, watches it at work for a while and cancels it too, to know what
// the work would have looked like. A second request must complete.
func CheckCancelBeforeWork(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	if cfg.Slow == nil {
		return skip("no Slow tool call configured (ServerConfig.Slow)")
	}
	p, before := sendSlow(s, cfg)
	c, err := cancelAndWatch(ctx, s, p, cfg, before)
	if err != nil {
		return failErr("", "cancelling the call right behind it", err)
	}
	// The signature, from a call left to work, is needed only if nothing
	// showed the first call going on.
	g := signature{cpuShare: -1}
	if res := c.judge(s, g, cfg, ctx); res.Verdict == Pass || strings.HasPrefix(res.Evidence, "unverified") {
		q := s.Send(wire.MethodToolsCall, cfg.Slow.params(newProgressToken()))
		from := sampleWork(s, q)
		g = observe(ctx, s, q, from, cfg.calibrationWindow())
		if !ended(q) {
			_ = q.Cancel("mcpstdio: the cancel criterion's second call")
		}
	}
	res := c.judge(s, g, cfg, ctx)
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
