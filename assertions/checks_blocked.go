package assertions

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// CheckNoDeadlock runs scenario under a watchdog. If scenario has not
// returned within the bound, it records the session's diagnosis, closes the
// session (which kills the server and closes every pipe, so whatever the
// scenario is blocked on fails), waits for scenario to return (at most the
// bound and 10 seconds more) and fails with the diagnosis. Otherwise the
// verdict is scenario's: pass if it returns nil. The context scenario gets
// ends at the bound too; well-behaved scenarios use it for every wait.
func CheckNoDeadlock(ctx context.Context, s *mcptest.Session, within time.Duration, scenario func(ctx context.Context) error) Result {
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- scenario(sctx) }()
	select {
	case err := <-done:
		return scenarioResult(err)
	case <-sctx.Done():
	}
	select { // it may have returned just as the bound fired
	case err := <-done:
		return scenarioResult(err)
	default:
	}
	diag := s.Diagnose()
	closeErr := s.Close()
	var serr error
	select {
	case serr = <-done:
	case <-time.After(within + 10*time.Second):
		serr = fmt.Errorf("the scenario did not return even after the session was closed: it blocks on something outside the session")
	}
	return Result{Verdict: Fail, Rule: ruleSecondRequest,
		Evidence: fmt.Sprintf("the scenario did not finish within %v; the server was killed (Close: %v); the scenario then returned: %v", within, closeErr, firstLine(fmt.Sprint(serr))),
		Details:  "diagnosis at the deadline:\n" + diag}
}

func scenarioResult(err error) Result {
	if err != nil {
		return failErr("", "the scenario failed", err)
	}
	return pass("the scenario finished")
}

// AssertNoDeadlock is CheckNoDeadlock for tests: it fails t with the
// diagnosis instead of letting the test binary time out.
func AssertNoDeadlock(t testing.TB, s *mcptest.Session, within time.Duration, scenario func(ctx context.Context) error) {
	t.Helper()
	report(t, CheckNoDeadlock(testContext(t), s, within, scenario))
}

// CheckSecondRequestCompletes checks that Session.Ping (ping or
// server/discover, by era), with a fresh id, is answered within the bound:
// what is checked is that the server still responds, so an error response
// counts as an answer.
func CheckSecondRequestCompletes(ctx context.Context, s *mcptest.Session, within time.Duration) Result {
	begin := time.Now()
	if err := checkCheap(ctx, s, within, nil); err != nil {
		return failErr(ruleSecondRequest, "second request", err)
	}
	return pass("the second request was answered in %v", time.Since(begin).Round(time.Millisecond))
}

// AssertSecondRequestCompletes is CheckSecondRequestCompletes for tests.
func AssertSecondRequestCompletes(t testing.TB, s *mcptest.Session, within time.Duration) {
	t.Helper()
	report(t, CheckSecondRequestCompletes(testContext(t), s, within))
}

// CheckWriterBlocked checks that, with the host's reads stalled, the server
// ends up blocked writing its stdout within the bound: the reproduction step
// of every back-pressure bug. It stalls reads if they are not stalled yet;
// the caller has started something that writes a lot. The evidence is
// mcptest.Session.WaitWriterBlocked's. A server still writing or busy at
// the bound is a warning, "unverified", with the rate and the bound that
// would do; the bound is the harness's, not the server's fault.
func CheckWriterBlocked(ctx context.Context, s *mcptest.Session, within time.Duration) Result {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	s.StallReads()
	if err := s.WaitWriterBlocked(ctx); err != nil {
		var nb *mcptest.NotBlockedError
		if errors.As(err, &nb) && s.Stats().Exit.How == "" {
			if why, ok := stillWriting(nb, "the bound"); ok {
				return Result{Verdict: Warn, Evidence: fmt.Sprintf("unverified: the server did not block writing stdout within %v with reads stalled, but %s", within, why), Details: nb.Wait.Diagnosis}
			}
		}
		return failErr("", fmt.Sprintf("the server did not block writing stdout within %v with reads stalled", within), err)
	}
	return pass("writer blocked: %s", s.Stats().WriterEvidence)
}

// AssertWriterBlocked is CheckWriterBlocked for tests.
func AssertWriterBlocked(t testing.TB, s *mcptest.Session, within time.Duration) {
	t.Helper()
	report(t, CheckWriterBlocked(testContext(t), s, within))
}

// notLarge fails a check whose Large call did not produce a response larger
// than the pipe: then a "blocked writer" may have been a short response
// sitting in a small pipe, and the check proved nothing.
func notLarge(s *mcptest.Session, resp *mcptest.Response, large *ToolCall) (Result, bool) {
	return tooSmall(resp, large, s.Stats().WriterEvidence.Capacity) // what the pipe really was
}

// tooSmall fails a Large call whose response was an error or no larger
// than the stdout pipe's capacity (when known).
func tooSmall(resp *mcptest.Response, large *ToolCall, capacity int) (Result, bool) {
	switch {
	case resp.Error != nil:
		return fail(ruleLargeCall, "the Large call (%s) failed: %v: configure a call that returns a large result", large.describe(), resp.Error), true
	case len(resp.Result) <= capacity:
		return fail(ruleLargeCall, "the Large call (%s) returned only %d bytes, not more than the %d-byte stdout pipe: configure a larger result", large.describe(), len(resp.Result), capacity), true
	}
	return Result{}, false
}

// largeNotBlocking judges a check whose Large call (big) did not block the
// server's stdout within WaitWriterBlocked's bound (err), as
// CheckStallCancelRecover's doc says.
func largeNotBlocking(ctx context.Context, s *mcptest.Session, big *mcptest.Pending, cfg ServerConfig, err error) Result {
	var nb *mcptest.NotBlockedError
	if !errors.As(err, &nb) {
		if e := serverEnded(s); e != "" {
			return fail(ruleSecondRequest, "%s while the Large call (%s) ran with the host's reads stalled", e, cfg.Large.describe())
		}
		return failErr("", "waiting for the Large call to block the server's stdout", err) // the session was closed under the check
	}
	if s.Stats().Exit.How != "" {
		res := fail(ruleSecondRequest, "%s while the Large call (%s) ran with the host's reads stalled, before its stdout blocked (%s)", serverEnded(s), cfg.Large.describe(), nb.Summary())
		res.Details = nb.Wait.Diagnosis
		return res
	}
	unverified := func(format string, args ...any) Result {
		return Result{Verdict: Warn, Rule: ruleLargeCall, Evidence: "unverified: " + fmt.Sprintf(format, args...), Details: nb.Wait.Diagnosis}
	}
	if why, ok := stillWriting(nb, "Within"); ok {
		return unverified("the Large call (%s) did not block the server's stdout within the bound of %v, but %s", cfg.Large.describe(), nb.Waited.Round(time.Millisecond), why)
	}
	// Idle, or nothing to tell: what did the Large call produce?
	s.ResumeReads()
	wctx, cancel := context.WithTimeout(ctx, cfg.Within)
	resp, werr := big.Wait(wctx)
	cancel()
	switch {
	case werr == nil:
		if res, bad := tooSmall(resp, cfg.Large, nb.Capacity); bad {
			res.Evidence += fmt.Sprintf(" (with the host's reads stalled it did not block the server's stdout: %s)", nb.Summary())
			return res
		}
		than := "larger than the pipe: the server wrote most of it after the bound"
		if nb.Capacity <= 0 {
			than = "and the pipe's capacity is unknown"
		}
		return unverified("the Large call (%s) did not block the server's stdout within the bound of %v (%s), yet its response was %d bytes, %s; raise Within to get a verdict", cfg.Large.describe(), nb.Waited.Round(time.Millisecond), nb.Summary(), len(resp.Result), than)
	case s.Stats().Exit.How != "":
		return fail(ruleSecondRequest, "%s while the Large call (%s) ran (%s)", serverEnded(s), cfg.Large.describe(), nb.Summary())
	}
	return unverified("the Large call (%s) did not block the server's stdout within the bound of %v (%s), and had not answered %v after reads resumed (%s): slow, or stopped, nothing shows which; raise Within to get a verdict", cfg.Large.describe(), nb.Waited.Round(time.Millisecond), nb.Summary(), cfg.Within, firstLine(werr.Error()))
}

// stillWriting says how a server that did not block writing stdout within
// the bound (named knob) was still at work — its stdout pipe filling, or
// the server busy on a CPU or waiting for one (mcptest's rule for stopped
// and slow) — and how to get a verdict.
func stillWriting(nb *mcptest.NotBlockedError, knob string) (string, bool) {
	a := nb.Activity
	if a.StdoutWritten > 0 && a.Window > 0 {
		why := "the server was still writing: " + nb.Summary()
		if rate := float64(a.StdoutWritten) / a.Window.Seconds(); nb.Capacity > nb.Buffered && nb.Buffered >= 0 {
			need := nb.Waited + time.Duration(float64(nb.Capacity-nb.Buffered)/rate*float64(time.Second))
			return fmt.Sprintf("%s; raise %s above about %v to get a verdict", why, knob, need.Round(100*time.Millisecond)), true
		}
		return fmt.Sprintf("%s; raise %s to get a verdict", why, knob), true
	}
	if a.Busy {
		return fmt.Sprintf("the server was busy: %s; raise %s to get a verdict", nb.Summary(), knob), true
	}
	return "", false
}

// AssertReadsWhileBlocked is CheckReadsWhileBlocked for tests.
func AssertReadsWhileBlocked(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckReadsWhileBlocked(testContext(t), s, cfg))
}

// CheckStallCancelRecover is the back-pressure scenario end to end: reads
// stalled → the Large call → the writer blocked → notifications/cancelled
// → reads resumed → a second request completes. More than a pipeful must
// arrive after the writer is released (bytes handed to write(2) cannot be
// recalled), or the Large call was too small to block anything. Without a
// Large call, the server's own answers to a flood of its cheapest request
// (ping, or server/discover in 2026-07-28) block its stdout, and the last
// of those requests is the one cancelled.
//
// The bound of the wait for the writer to block (Within) is the harness's,
// never the server's fault: when it runs out first, the verdict goes by
// what was seen. The pipe still filling, or the server busy (CPU demand, a
// thread running or runnable), is a warning, "unverified", with the fill
// level, its rate and the bound. The server ended is that fact. Otherwise
// reads are resumed and the Large call's response looked at: an error or
// one no larger than the pipe is the configuration's failure, with that
// evidence; a larger one, or none within Within, is "unverified" (the
// server produced slowly, or has not yet).
func CheckStallCancelRecover(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	before := s.Stats().StdoutBytes
	if cfg.Large == nil {
		return stallFilledCancelRecover(ctx, s, cfg, before)
	}
	s.StallReads()
	big := s.Send(wire.MethodToolsCall, cfg.Large.params(nil))
	if err := s.WaitWriterBlocked(ctx); err != nil {
		return largeNotBlocking(ctx, s, big, cfg, err)
	}
	blocked := s.Stats().WriterEvidence
	if err := big.Cancel("mcpstdio: result exceeded the client budget"); err != nil {
		return failErr(ruleReadsBlocked, "sending notifications/cancelled while the server's stdout was blocked", err)
	}
	s.ResumeReads()
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		return failErr(ruleSecondRequest, "stall → large call → writer blocked → cancel → resume", err)
	}
	// A writer that was really blocked had more than a pipeful to write, and
	// bytes handed to write(2) cannot be recalled: more than the pipe held
	// must have arrived. Otherwise a short response sat in the pipe.
	if got := s.Stats().StdoutBytes - before; blocked.Capacity > 0 && got <= int64(blocked.Capacity) {
		return fail(ruleLargeCall, "only %d bytes arrived after the \"blocked\" writer was released, no more than the %d-byte stdout pipe holds: the Large call (%s) did not produce a large enough response to block the server; configure a larger one", got, blocked.Capacity, cfg.Large.describe())
	}
	return pass("writer blocked (%s); after cancel and resume the second request completed; %s", blocked, afterCancel(ctx, big))
}

// stallFilledCancelRecover is CheckStallCancelRecover without a Large
// call: stdout filled by the server's answers, the last request of the
// fill cancelled.
func stallFilledCancelRecover(ctx context.Context, s *mcptest.Session, cfg ServerConfig, before int64) Result {
	f, err := fillStdout(ctx, s)
	if err != nil {
		return fillNotBlocking(s, f, err)
	}
	blocked := s.Stats().WriterEvidence
	// The fill may have left the stdin pipe full behind a server that reads
	// only between writes: the cancel is written as a host's writer would,
	// on its own, and gets through once the server reads again.
	sent := make(chan error, 1)
	go func() {
		sent <- s.Notify(wire.MethodCancelled, map[string]any{"requestId": f.last, "reason": "mcpstdio: result exceeded the client budget"})
	}()
	s.ResumeReads()
	if err := <-sent; err != nil {
		return failErr(ruleReadsBlocked, "sending notifications/cancelled while the server's stdout was blocked", err)
	}
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		return failErr(ruleSecondRequest, fmt.Sprintf("stall → %s → writer blocked → cancel → resume", f.describe()), err)
	}
	if got := s.Stats().StdoutBytes - before; blocked.Capacity > 0 && got <= int64(blocked.Capacity) {
		return fail(ruleLargeCall, "only %d bytes arrived after the \"blocked\" writer was released, no more than the %d-byte stdout pipe holds: %s did not block it", got, blocked.Capacity, f.describe())
	}
	return pass("writer blocked by %s (%s); after cancelling %s id %d and resuming, the second request completed", f.describe(), blocked, f.method, f.last)
}

// afterCancel says what became of a cancelled request so far.
func afterCancel(ctx context.Context, p *mcptest.Pending) string {
	if !ended(p) {
		return "no response to the cancelled request (suppressed, or still to come)"
	}
	switch resp, err := p.Wait(ctx); {
	case err != nil:
		return "the cancelled request ended with: " + firstLine(err.Error())
	case resp.Late:
		return fmt.Sprintf("its response arrived late, %d bytes: %s", p.Received(), resp)
	}
	return "its response had arrived before the cancel"
}

// AssertStallCancelRecover is CheckStallCancelRecover for tests.
func AssertStallCancelRecover(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckStallCancelRecover(testContext(t), s, cfg))
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
