package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/wire"
)

// DefaultHostCap is HostConfig.Cap's default: how long a host's own
// timeout is waited for.
const DefaultHostCap = 2 * time.Minute

// hostWorkTool is the tool a Go Host calls for the criterion's work; the
// fake's -call decides what it does.
const hostWorkTool = "work"

const (
	ruleHostTimeout  = "a host bounds every request with a timeout of its own and, when it gives up, sends notifications/cancelled for it"
	ruleHostProgress = "a host SHOULD enforce a maximum timeout regardless of progress notifications"
	ruleHostLate     = "a response after a cancel SHOULD be ignored: the host stays healthy and a further call works"
	ruleHostCrash    = "a server that ends mid-response is an error the host reports within a bound; the client SHOULD restart a server that ended"
	ruleHostStdin    = "a server that stops reading stdin never freezes the host past its own timeout"
	ruleHostToolList = "a host takes a large tools/list whole, or rejects it with a message; it never drops tools silently"
	ruleHostCommand  = "a host command starts the server it is given and finishes the handshake; the criteria about a call need it to call a tool"
)

// capCriteria are the criteria that wait for the host's own timeout, up to
// HostConfig.Cap.
var capCriteria = []string{"host-timeout", "progress-forever", "late-after-cancel", "stdin-not-read", "close-bounded", "shutdown-ladder", "handshake-timeout"}

// hostBudget is the watchdog's budget for one host criterion.
func hostBudget(name string, cfg HostConfig) time.Duration {
	if slices.Contains(capCriteria, name) {
		return cfg.Cap + 8*cfg.Within
	}
	return 8 * cfg.Within
}

// hostOutcome is how the host's call ended.
type hostOutcome struct {
	result  json.RawMessage // a Go Host's result
	err     error           // the call's error, or how a command ended if not with status 0
	took    time.Duration   // the call (Go), or the command's whole run
	ended   time.Time
	atLimit bool   // it was still waiting when the limit passed: the criterion ended it
	hung    bool   // a Go Host's CallTool did not return even then
	exit    string // a command's exit status
	output  string // a command's output, head and tail
}

// how says how the call ended, in a few words.
func (o hostOutcome) how() string {
	if o.exit != "" {
		return o.exit + ", last output line: " + lastLine(o.output)
	}
	if o.err != nil {
		return "error: " + truncate(firstLine(o.err.Error()), 300)
	}
	return "a result"
}

// startWith starts the fake with flags and the host against it: -call echo
// unless the criterion sets -call, so that whatever the host calls first is
// answered.
func (r *hostFixture) startWith(ctx context.Context, flags ...string) error {
	if !slices.Contains(flags, "-call") {
		flags = append(flags, "-call", fakeserver.ToolEcho)
	}
	return r.start(ctx, flags...)
}

// work makes the host's call and waits at most limit for it: a Go Host
// calls hostWorkTool with args; a command is waited for until it ends (with
// a start-up allowance of Within on top of limit).
func (r *hostFixture) work(ctx context.Context, limit time.Duration, args map[string]any) hostOutcome {
	if r.command != nil {
		return r.waitCommand(ctx, limit+r.cfg.Within)
	}
	if args == nil {
		args = map[string]any{"text": "work"}
	}
	begin := time.Now()
	res, err := callBounded(ctx, r.host, limit, hostWorkTool, args)
	o := hostOutcome{result: res, err: err, ended: time.Now()}
	o.took = o.ended.Sub(begin)
	o.hung = errors.Is(err, errHostHung)
	o.atLimit = o.hung || (err != nil && o.took >= limit)
	return o
}

// further makes a further call (Go), or looks for the host command's
// further calls in the fake's report; made is false when a command made
// none.
func (r *hostFixture) further(ctx context.Context) (made bool, err error) {
	if r.command == nil {
		return true, r.checkFollowUp(ctx)
	}
	rep, _ := r.fakeReport()
	calls := 0
	for _, q := range rep.Requests {
		if q.Method != wire.MethodToolsCall {
			continue
		}
		if calls++; calls > 1 && (q.State != fakeserver.StateDone || q.ResponseBytes == 0) {
			return true, fmt.Errorf("the host's further tools/call %s (%s) got no answer (%s)", q.ID, q.Tool, q.State)
		}
	}
	return calls > 1, nil
}

// furtherNote says what a successful further call showed.
func furtherNote(made bool) string {
	if made {
		return "a further call succeeded"
	}
	return "the host made no further call (judged by its exit status)"
}

// settled returns the fake's report once it tells the end of the host's
// call: the fake has ended (a command, whose end closes its stdin), or (a
// Go Host) it has a cancel of the call, waited for at most a moment unless
// no cancel can reach it any more (see deaf).
func (r *hostFixture) settled(ctx context.Context) fakeserver.Report {
	if r.command != nil {
		if !r.run.killed { // a killed host's fake was killed with it
			r.waitReport(ctx, fakeEnded)
		}
	} else {
		wctx, cancel := context.WithTimeout(ctx, min(r.cfg.Within, time.Second))
		r.waitReport(wctx, func(rep fakeserver.Report) bool { return len(rep.Cancels) > 0 || deaf(rep) })
		cancel()
	}
	rep, _ := r.fakeReport()
	return rep
}

// fakeEnded reports whether the fake's report is its last: the fake has
// ended (Exit), or, on Linux, it is gone without saying so (killed with
// SIGKILL, as some hosts end their servers). Elsewhere only Exit tells, and
// waitReport's bound ends the wait for a killed fake. A fake whose host is
// gone ends at stdin's end; the bound also ends the wait for one the host
// left something to read.
func fakeEnded(rep fakeserver.Report) bool {
	if rep.Exit != "" {
		return true
	}
	if runtime.GOOS != "linux" || rep.PID <= 0 {
		return false
	}
	id, ok := proc.Identify(rep.PID)
	return !ok || !id.Running()
}

// deaf reports whether the fake, by its report, reads nothing more: it
// stopped reading stdin, or it crashed or ended (it is exiting).
func deaf(rep fakeserver.Report) bool {
	return !rep.StdinStopped.IsZero() || !rep.CallCrashed.IsZero() || rep.Exit != ""
}

// firstCall is the host's first tools/call, the one the criterion's fault
// is about.
func firstCall(rep fakeserver.Report) (fakeserver.RequestRecord, bool) {
	i := slices.IndexFunc(rep.Requests, func(q fakeserver.RequestRecord) bool { return q.Method == wire.MethodToolsCall })
	if i < 0 {
		return fakeserver.RequestRecord{}, false
	}
	return rep.Requests[i], true
}

func cancelOf(rep fakeserver.Report, id string) (fakeserver.CancelRecord, bool) {
	i := slices.IndexFunc(rep.Cancels, func(c fakeserver.CancelRecord) bool { return c.ID == id })
	if i < 0 {
		return fakeserver.CancelRecord{}, false
	}
	return rep.Cancels[i], true
}

// unreadCancelOf returns the cancel of id the fake found unread in its
// stdin (Report.UnreadCancels).
func unreadCancelOf(rep fakeserver.Report, id string) (fakeserver.CancelRecord, bool) {
	i := slices.IndexFunc(rep.UnreadCancels, func(c fakeserver.CancelRecord) bool { return c.ID == id })
	if i < 0 {
		return fakeserver.CancelRecord{}, false
	}
	return rep.UnreadCancels[i], true
}

// serverEnd says how the host began ending the fake, and when after the
// call arrived: its first signal or its stdin's end; "" for neither.
func serverEnd(rep fakeserver.Report, call fakeserver.RequestRecord) string {
	what, at := "its stdin's end", rep.EOFAt
	for _, s := range rep.Signals {
		if at.IsZero() || s.At.Before(at) {
			what, at = s.Name, s.At
		}
	}
	if at.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s %v after the call", what, at.Sub(call.Arrived).Round(time.Millisecond))
}

func noCall(rep fakeserver.Report, o hostOutcome) Result {
	return fail(ruleHostCommand, "the host made no tools/call (requests the fake saw: %s); it ended with %s", requestMethods(rep), o.how())
}

// requestMethods lists the methods of the requests the fake saw.
func requestMethods(rep fakeserver.Report) string {
	var methods []string
	for _, q := range rep.Requests {
		methods = append(methods, q.Method)
	}
	if len(methods) == 0 {
		return "none"
	}
	return strings.Join(methods, ", ")
}

// giveUp judges a call the fake never answers: whether the host gave up by
// itself within the cap, when, how, and whether it cancelled; fault is what
// the fake did.
func (r *hostFixture) giveUp(ctx context.Context, o hostOutcome, fault, rule string, atCap Verdict) Result {
	return r.judgeGiveUp(r.settled(ctx), o, fault, rule, atCap)
}

// judgeGiveUp is giveUp's verdict from the fake's settled report. A cancel
// the fake found unread in its stdin when the host ended it counts as sent
// (the host ended the server before it could read it); with none, read or
// unread, the host did not send one before the server's end, which is said.
func (r *hostFixture) judgeGiveUp(rep fakeserver.Report, o hostOutcome, fault, rule string, atCap Verdict) Result {
	call, ok := firstCall(rep)
	if !ok {
		return noCall(rep, o)
	}
	c, cancelled := cancelOf(rep, call.ID)
	if o.atLimit {
		what := "no notifications/cancelled"
		if cancelled {
			what = "a notifications/cancelled only when the criterion ended it"
		}
		res := fail(rule, "%s: the host was still waiting %v after the call (the cap is %v: HostConfig.Cap, -host-cap): no timeout of its own fired; %s", fault, o.ended.Sub(call.Arrived).Round(time.Millisecond), r.cfg.Cap, what)
		res.Verdict = atCap
		if o.hung {
			res.Evidence += "; its CallTool did not return even after its context ended"
			res.Verdict = Fail
		}
		return res
	}
	after := o.ended.Sub(call.Arrived).Round(time.Millisecond)
	if u, unread := unreadCancelOf(rep, call.ID); !cancelled && unread {
		// Sent, and lost to the server only because the host ended it
		// before it could read it: the host did cancel.
		return pass("%s: the host %s %v after the call (%s) and sent notifications/cancelled (reason %q), which the server never read: it was still in its stdin when the host ended it (%s)",
			fault, r.gaveUp(), after, o.how(), u.Reason, serverEnd(rep, call))
	}
	if !cancelled {
		left := "the server is left working"
		if rep.Exit == "" && fakeEnded(rep) {
			left = "the host killed the server before it recorded a signal or its stdin's end (SIGKILL, or a signal it had no time to take in), so it never looked for a cancel on its way: unverified"
		}
		if end := serverEnd(rep, call); end != "" {
			left = "the host ended the server instead (" + end + ")"
			// The fake looks for unread cancels at each signal and as it
			// ends (Linux): say at which look none was there.
			switch n := len(rep.Signals); {
			case runtime.GOOS != "linux":
			case rep.Exit != "":
				left += ", and none was left unread in its stdin when it ended: the host had not written one"
			case n > 0:
				left += fmt.Sprintf(", and none was unread in its stdin at %s, its last look before it was killed", rep.Signals[n-1].Name)
			}
		}
		res := fail(rule, "%s: the host %s %v after the call (%s) without sending notifications/cancelled: %s", fault, r.gaveUp(), after, o.how(), left)
		res.Verdict = Warn
		return res
	}
	return pass("%s: the host %s %v after the call (%s) and sent notifications/cancelled %v after the call (reason %q)",
		fault, r.gaveUp(), after, o.how(), c.Arrived.Sub(call.Arrived).Round(time.Millisecond), c.Reason)
}

func hostTimeout(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-call", fakeserver.CallHang); err != nil {
		return hostStartFailed(err)
	}
	return r.giveUp(ctx, r.work(ctx, r.cfg.Cap, nil), "a call the fake never answers", ruleHostTimeout, Fail)
}

func hostProgressForever(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-call", fakeserver.CallProgress); err != nil {
		return hostStartFailed(err)
	}
	fault := fmt.Sprintf("a call with progress every %v and never an answer", fakeserver.ProgressEvery)
	return r.giveUp(ctx, r.work(ctx, r.cfg.Cap, nil), fault, ruleHostProgress, Warn)
}

func hostLateAfterCancel(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-call", fakeserver.CallHang, "-respond-after-cancel"); err != nil {
		return hostStartFailed(err)
	}
	var o hostOutcome
	if r.command != nil {
		o = r.work(ctx, r.cfg.Cap, nil) // the host's own timeout cancels, if it does
	} else {
		// A Go Host cancels when its context ends: end it once the call runs.
		cctx, cancel := context.WithCancel(ctx)
		go func() {
			defer cancel()
			r.waitReport(cctx, func(rep fakeserver.Report) bool {
				q, ok := firstCall(rep)
				return ok && q.State == fakeserver.StateRunning
			})
		}()
		o = r.work(cctx, r.cfg.Within, nil)
		cancel()
	}
	rep := r.settled(ctx)
	call, ok := firstCall(rep)
	if !ok {
		return noCall(rep, o)
	}
	if _, cancelled := cancelOf(rep, call.ID); !cancelled {
		if _, unread := unreadCancelOf(rep, call.ID); unread {
			return skip("the host's notifications/cancelled reached the server's stdin but was still unread when the host ended it (%s): there was nothing to answer late (see host-timeout)", serverEnd(rep, call))
		}
		if o.atLimit {
			return skip("the host sent no notifications/cancelled for its call within %v: there was nothing to answer late (see host-timeout)", r.cfg.Cap)
		}
		return skip("the host gave up (%s) without notifications/cancelled: there was nothing to answer late (see host-timeout)", o.how())
	}
	if r.command != nil && o.atLimit {
		return fail(ruleHostLate, "the fake answered the call after the host's cancel, and the host was still running %v later", r.cfg.Cap)
	}
	made, err := r.further(ctx)
	if err != nil {
		return failErr(ruleHostLate, "after the fake's late answer to the cancelled call", err)
	}
	if r.command != nil && o.err != nil && !made {
		return pass("the fake answered the call after the host's cancel; the host then ended by itself (%s)", o.how())
	}
	return pass("the fake answered the call after the host's cancel; %s", furtherNote(made))
}

func hostCrashMidCall(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-call", fakeserver.CallCrash); err != nil {
		return hostStartFailed(err)
	}
	o := r.work(ctx, r.cfg.Within, nil)
	rep := r.settled(ctx)
	if _, ok := firstCall(rep); !ok {
		return noCall(rep, o)
	}
	starts := len(r.reportFiles())
	restart := "it did not restart the server"
	if starts > 1 {
		restart = fmt.Sprintf("it restarted the server (%d starts)", starts)
	}
	switch {
	case rep.CallCrashed.IsZero() && rep.StdoutLongestBlock >= 100*time.Millisecond && rep.StdoutBytes < fakeserver.CrashFrameSize/2:
		// The crash comes half-way through the response: a host that
		// stopped reading before it leaves the fake blocked short of it.
		return fail(ruleHostReads, "the host stopped reading the server's stdout before the crash point: the fake wrote %d bytes to stdout in all and was blocked writing (%v at the longest), short of the %d-byte half of its response after which it exits; its exit: %q", rep.StdoutBytes, rep.StdoutLongestBlock.Round(time.Millisecond), fakeserver.CrashFrameSize/2, rep.Exit)
	case rep.CallCrashed.IsZero():
		return fail(ruleHostCrash, "the fake did not reach its crash point, half-way through a %d-byte response (%d bytes written to stdout in all; its exit: %q)", fakeserver.CrashFrameSize, rep.StdoutBytes, rep.Exit)
	case o.atLimit:
		return fail(ruleHostCrash, "the server exited half-way through a %d-byte response and the host was still waiting %v later; %s", fakeserver.CrashFrameSize, r.cfg.Within, restart)
	case o.err == nil && r.command == nil:
		return fail(ruleHostCrash, "the server exited half-way through a %d-byte response and the host returned a result: %.200s", fakeserver.CrashFrameSize, o.result)
	}
	after := o.ended.Sub(rep.CallCrashed).Round(time.Millisecond)
	if o.err == nil && starts < 2 {
		return Result{Verdict: Warn, Rule: ruleHostCrash, Evidence: fmt.Sprintf("the server exited half-way through a response; the host ended %v later with exit status 0 (reporting no error by its status; last output line: %s); %s", after, lastLine(o.output), restart)}
	}
	return pass("the server exited half-way through a %d-byte response; the host ended the call %v later (%s); %s", fakeserver.CrashFrameSize, after, o.how(), restart)
}

func hostStdinNotRead(ctx context.Context, r *hostFixture) Result {
	if err := r.startWith(ctx, "-stop-reading-after-handshake"); err != nil {
		return hostStartFailed(err)
	}
	// Large arguments fill the pipe the fake no longer reads.
	o := r.work(ctx, r.cfg.Cap, map[string]any{"text": strings.Repeat("x", 1<<20)})
	rep := r.settled(ctx)
	if rep.StdinStopped.IsZero() {
		return fail(ruleHostStdin, "the fake never saw the handshake end (requests: %d), so it never stopped reading; the host ended with %s", len(rep.Requests), o.how())
	}
	if o.atLimit {
		res := fail(ruleHostStdin, "the fake stopped reading stdin after the handshake; the host was still waiting %v later (the cap is %v)", o.ended.Sub(rep.StdinStopped).Round(time.Millisecond), r.cfg.Cap)
		if o.hung {
			res.Evidence += ", and its CallTool did not return even after its context ended: it is frozen"
		}
		return res
	}
	ended := "the host's call ended"
	if r.command != nil {
		ended = "the host ended"
	}
	return pass("the fake stopped reading stdin after the handshake; %s %v later (%s)", ended, o.ended.Sub(rep.StdinStopped).Round(time.Millisecond), o.how())
}

// idleCommand is idle-notifications for a host command: the fake writes
// notifications after its answer, while the host is between calls.
func (r *hostFixture) idleCommand(ctx context.Context) Result {
	if err := r.startWith(ctx, "-idle-notify-bytes", fmt.Sprint(r.cfg.IdleNotifications)); err != nil {
		return hostStartFailed(err)
	}
	o := r.work(ctx, r.cfg.Within, nil)
	if o.err != nil {
		return failErr(ruleHostReads, fmt.Sprintf("with %d bytes of notifications after the answer", r.cfg.IdleNotifications), o.err)
	}
	rep := r.settled(ctx)
	made, err := r.further(ctx)
	switch {
	case err != nil:
		return failErr(ruleHostReads, "after the notifications", err)
	case !made:
		// Whether its one call's notifications got out before it ended is
		// a race with its exit, not a verdict.
		return skip("the host made one call and ended (exit status 0): a host command that makes no further call cannot show that it reads while idle")
	case !rep.IdleNotifyDone:
		return fail(ruleHostReads, "the host made further calls but the fake got only %d of %d bytes of notifications out while it was between them", rep.IdleNotifyBytes, r.cfg.IdleNotifications)
	}
	return pass("%d bytes of notifications written after the answer, longest stdout block %v; the host ended with exit status 0", r.cfg.IdleNotifications, rep.StdoutLongestBlock.Round(time.Millisecond))
}

// gaveUp is what the end of the host's call is, by the kind of host: a Go
// Host's call returns; a command is timed to its exit.
func (r *hostFixture) gaveUp() string {
	if r.command != nil {
		return "ended"
	}
	return "gave up"
}
