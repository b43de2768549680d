package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/wire"
)

// bigFlags makes the host's first call a big response with args.
func bigFlags(args fakeserver.BigArgs) []string {
	b, _ := json.Marshal(args.Map())
	return []string{"-call", fakeserver.ToolBig, "-call-args", string(b)}
}

// intact checks that a big response arrived whole: a Go Host's result
// holds at least want bytes of text in at least blocks blocks; a command
// ended with status 0 (and its output matches ExpectOutput, if set).
func (r *hostFixture) intact(o hostOutcome, want, blocks int) (int, error) {
	if o.err != nil || r.command != nil {
		return 0, o.err
	}
	return bigIntact(o.result, want, blocks)
}

func (r *hostFixture) bigCriterion(ctx context.Context, args fakeserver.BigArgs, want, blocks int, what string) Result {
	if err := r.startWith(ctx, bigFlags(args)...); err != nil {
		return hostStartFailed(err)
	}
	got, err := r.intact(r.work(ctx, r.cfg.Within, nil), want, blocks)
	if err != nil {
		return failErr(ruleHostIntact, what, err)
	}
	made, err := r.further(ctx)
	if err != nil {
		return failErr(ruleHostGoesOn, "after "+what, err)
	}
	if r.command != nil {
		// A host command's exit says little unless the fake wrote the
		// payload: it is only in a tools/call's response.
		rep, _ := r.fakeReport()
		i := slices.IndexFunc(rep.Requests, func(q fakeserver.RequestRecord) bool { return q.Method == wire.MethodToolsCall })
		switch {
		case i < 0:
			return skip("%s was never sent: the host called no tool (it ended with exit status 0)", what)
		case rep.Requests[i].State != fakeserver.StateDone || rep.Requests[i].Cut || rep.Requests[i].ResponseBytes == 0:
			q := rep.Requests[i]
			return fail(ruleHostIntact, "%s: the host ended with exit status 0 before it took the response (%d bytes of it written, the call %s)", what, q.ResponseBytes, q.State)
		}
		return pass("%s: all %d bytes written to the host, which ended with exit status 0; %s", what, rep.Requests[i].ResponseBytes, furtherNote(made))
	}
	return pass("%s arrived intact (%d bytes of text); %s", what, got, furtherNote(made))
}

func hostUnderLimit(ctx context.Context, r *hostFixture) Result {
	if r.cfg.MaxFrame <= 0 {
		return skip("HostConfig.MaxFrame not set")
	}
	// 1 KiB under: hosts differ in whether the newline and their
	// decoder's read-ahead count towards the limit.
	size := r.cfg.MaxFrame - 1024
	return r.bigCriterion(ctx, fakeserver.BigArgs{FrameSize: size, Kind: fakeserver.PayloadMultibyte}, size-1024, 1,
		fmt.Sprintf("a %d-byte response (multibyte UTF-8; limit %d)", size, r.cfg.MaxFrame))
}

func hostOverLimit(ctx context.Context, r *hostFixture) Result {
	if r.cfg.MaxFrame <= 0 {
		return skip("HostConfig.MaxFrame not set")
	}
	size := r.cfg.MaxFrame + 1024
	if err := r.startWith(ctx, bigFlags(fakeserver.BigArgs{FrameSize: size})...); err != nil {
		return hostStartFailed(err)
	}
	o := r.work(ctx, r.cfg.Within, nil)
	switch {
	case o.err == nil:
		return fail(ruleHostLimit, "a %d-byte response over the host's %d-byte limit was accepted (%s)", size, r.cfg.MaxFrame, o.how())
	case o.atLimit:
		// Still taking the response when the bound passed is slow, not
		// hung: the bound is the harness's.
		rep, _ := r.fakeReport()
		if i := slices.IndexFunc(rep.Requests, func(q fakeserver.RequestRecord) bool { return q.Method == wire.MethodToolsCall }); i >= 0 && rep.Requests[i].State == fakeserver.StateWriting {
			return Result{Verdict: Warn, Rule: ruleHostLimit, Evidence: fmt.Sprintf("unverified: the host was still taking the %d-byte response over its limit (%d bytes of it written) when the harness's bound of %v passed; raise Within to get a verdict", size, rep.Requests[i].ResponseBytes, o.took.Round(time.Millisecond))}
		}
		return failErr(ruleHostLimit, fmt.Sprintf("a %d-byte response over the limit", size), o.err)
	}
	evidence := fmt.Sprintf("a %d-byte response over the limit gave a bounded error in %v (%s)", size, o.took.Round(time.Millisecond), o.how())
	if r.command != nil {
		return pass("%s", evidence)
	}
	if ferr := r.checkFollowUp(ctx); ferr != nil {
		if errors.Is(ferr, errHostHung) || errors.Is(ferr, context.DeadlineExceeded) {
			return failErr(ruleHostLimit, evidence+"; then", ferr)
		}
		return pass("%s; the host then reported the session ended (%s)", evidence, firstLine(ferr.Error()))
	}
	return pass("%s; a further call succeeded", evidence)
}

func hostHugeField(ctx context.Context, r *hostFixture) Result {
	// Quotes and backslashes take twice their size on the wire.
	size := r.cfg.HugeField
	return r.bigCriterion(ctx, fakeserver.BigArgs{FrameSize: size, Kind: fakeserver.PayloadQuotes}, (size-1024)/2, 1,
		fmt.Sprintf("a %d-byte response that is one text field of quotes and backslashes", size))
}

func hostManyBlocks(ctx context.Context, r *hostFixture) Result {
	// Each block carries about 40 bytes of envelope and 64 of text.
	size := r.cfg.Blocks * 64
	return r.bigCriterion(ctx, fakeserver.BigArgs{Bytes: size, Layout: fakeserver.LayoutBlocks, Blocks: r.cfg.Blocks, Kind: fakeserver.PayloadNewlines}, size, r.cfg.Blocks,
		fmt.Sprintf("%d content blocks (%d bytes of text with escaped newlines)", r.cfg.Blocks, size))
}

// followUpAfter is the shape of the fault criteria: start the fake with
// flags, make the host's call and a further one, and see that they work.
func followUpAfter(what string, flags ...string) func(ctx context.Context, r *hostFixture) Result {
	return func(ctx context.Context, r *hostFixture) Result {
		if err := r.startWith(ctx, flags...); err != nil {
			return hostStartFailed(err)
		}
		if o := r.work(ctx, r.cfg.Within, nil); o.err != nil {
			return failErr(ruleHostGoesOn, "after "+what, o.err)
		}
		made, err := r.further(ctx)
		if err != nil {
			return failErr(ruleHostGoesOn, "after "+what, err)
		}
		if r.command != nil {
			rep, _ := r.fakeReport()
			if _, ok := firstCall(rep); !ok {
				return pass("after %s the host ended with exit status 0%s; it made no tools/call (requests the fake saw: %s)", what, r.matched(), requestMethods(rep))
			}
		}
		return pass("after %s the host's call worked; %s", what, furtherNote(made))
	}
}

// matched says that a command's output matched ExpectOutput, if set.
func (r *hostFixture) matched() string {
	if r.command == nil || r.command.ExpectOutput == nil {
		return ""
	}
	return fmt.Sprintf(" and its output matched %q", r.command.ExpectOutput)
}

func hostInvalidJSON(ctx context.Context, r *hostFixture) Result {
	return followUpAfter("an invalid JSON line on stdout", "-invalid-json-after", "1")(ctx, r)
}

func hostStderrNoise(ctx context.Context, r *hostFixture) Result {
	res := followUpAfter(fmt.Sprintf("%d bytes of stderr", r.cfg.StderrNoise), "-stderr-noise", fmt.Sprint(r.cfg.StderrNoise))(ctx, r)
	// The noise comes before the fake reads its first message: a host that
	// does not drain stderr leaves it blocked there, the handshake unread.
	if rep, err := r.fakeReport(); res.Verdict == Fail && err == nil && rep.StderrBytes < r.cfg.StderrNoise {
		res.Evidence += fmt.Sprintf("; the fake's writes to stderr had returned for %d of the %d bytes when the host ended (a write blocked on a full pipe counts none of its bytes, however many sit in the pipe), and it read %d requests: its stderr was not drained", rep.StderrBytes, r.cfg.StderrNoise, len(rep.Requests))
	}
	return res
}

func hostJunk(ctx context.Context, r *hostFixture) Result {
	return followUpAfter("a banner and a log line on stdout", "-banner", "fake server ready", "-stdout-log-after", "2")(ctx, r)
}

func hostEra(era fakeserver.Era) func(ctx context.Context, r *hostFixture) Result {
	return func(ctx context.Context, r *hostFixture) Result {
		return followUpAfter("negotiating with a "+string(era)+"-only server", "-era", string(era))(ctx, r)
	}
}

func hostCancel(ctx context.Context, r *hostFixture) Result {
	if r.command != nil {
		return skip("a host command cancels only on its own: see host-timeout and late-after-cancel")
	}
	// The fake answers even a cancelled request, as the Go SDKs do today:
	// the late response must not break the host.
	if err := r.start(ctx, "-respond-after-cancel"); err != nil {
		return hostStartFailed(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := callBounded(cctx, r.host, r.cfg.Within, "slow", map[string]any{"steps": 1000000, "intervalMs": 10})
		done <- err
	}()
	// Wait until the fake runs the call, then cancel it.
	if err := r.waitReport(ctx, func(rep fakeserver.Report) bool {
		for _, q := range rep.Requests {
			if q.Tool == "slow" && q.State == fakeserver.StateRunning {
				return true
			}
		}
		return false
	}); err != nil {
		return failErr(ruleHostCancel, "waiting for the fake to run the slow call", err)
	}
	cancel()
	err := <-done
	if errors.Is(err, errHostHung) {
		return failErr(ruleHostCancel, "cancelling the call", err)
	}
	var cancelled fakeserver.CancelRecord
	if err := r.waitReport(ctx, func(rep fakeserver.Report) bool {
		if len(rep.Cancels) > 0 {
			cancelled = rep.Cancels[0]
			return true
		}
		return false
	}); err != nil {
		return Result{Verdict: Fail, Evidence: "the call was cancelled but the fake never received notifications/cancelled",
			Rule: ruleHostCancel}
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr(ruleHostGoesOn, "after the cancel and the fake's late response", err)
	}
	return pass("the fake received notifications/cancelled (work %s, stopped after %v); its late response did not break the host; a further call succeeded",
		cancelled.State, cancelled.StoppedAfter.Round(time.Millisecond))
}

func hostIdleNotifications(ctx context.Context, r *hostFixture) Result {
	if r.command != nil {
		return r.idleCommand(ctx)
	}
	if err := r.start(ctx, "-idle-notify-bytes", fmt.Sprint(r.cfg.IdleNotifications)); err != nil {
		return hostStartFailed(err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr(ruleHostReads, "first call", err)
	}
	// The fake now writes its notifications while the host is idle: it
	// must get them all out without blocking long.
	if err := r.waitReport(ctx, func(rep fakeserver.Report) bool { return rep.IdleNotifyDone }); err != nil {
		rep, _ := r.fakeReport()
		return failErr(ruleHostReads, fmt.Sprintf("the fake got only %d of %d bytes of notifications out while the host was idle: the host does not read stdout between calls", rep.IdleNotifyBytes, r.cfg.IdleNotifications), err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr(ruleHostReads, "after the notifications", err)
	}
	rep, _ := r.fakeReport()
	return pass("%d bytes of notifications written while the host was idle, longest stdout block %v; a further call succeeded", r.cfg.IdleNotifications, rep.StdoutLongestBlock.Round(time.Millisecond))
}

// waitReport polls the fake's report file until ok, bounded by ctx and the
// criterion's bound: the report is a file the fake rewrites as it changes,
// with no notification to wait on.
func (r *hostFixture) waitReport(ctx context.Context, ok func(fakeserver.Report) bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Within)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		rep, err := r.fakeReport()
		if err == nil && ok(rep) {
			return nil
		}
		if errors.As(err, new(*harnessError)) {
			return err // the report will not show it
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("the fake's report did not show it within %v: %w", r.cfg.Within, ctx.Err())
		}
	}
}
