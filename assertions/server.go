package assertions

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ServerConfig configures ServerCriteria and CheckServer: the tool calls the
// criteria need and the bounds. A criterion whose call is not configured is
// skipped, with the reason.
type ServerConfig struct {
	// Large is a tools/call whose response is much larger than the pipe
	// capacity (a few hundred KiB is plenty with the default 16 KiB pipes).
	Large *ToolCall
	// Slow is a tools/call that works for a while unless cancelled —
	// longer than min(Within, 10×CancelGrace) (2s by default), which is
	// how long cancel-during-work waits for its first progress before
	// cancelling — and honours cancellation; if it sends progress
	// notifications when the request carries a progressToken, the criteria
	// use them as evidence that the work stopped.
	Slow *ToolCall
	// Bounded is a tools/call that could return a lot (a search over many
	// records); the result contract says it returns a bounded page and
	// says how to continue. See CheckResultBounded.
	Bounded *ToolCall
	// ContentBudget is the content budget in bytes the Bounded call's
	// result must fit. Default 64 KiB.
	ContentBudget int
	// Cheap is the small independent request of "a second request
	// completes". Nil means Session.Ping (ping or server/discover, by era).
	Cheap *ToolCall

	// OversizedRequest is the size in bytes of the oversized request line
	// sent to stdin. Default 32 MiB. Its criterion allows Within plus 250ms
	// per MiB for the server to read it and answer the next request.
	OversizedRequest int
	// Flood is how many small requests are written to stdin while the
	// server's stdout is blocked. Default 500.
	Flood int
	// PipeCapacity is the capacity of the stdin and stdout pipes. Default
	// (0) 16 KiB on Linux, so that modest responses block the writer;
	// elsewhere the capacity cannot be set and the system's default is
	// used. A negative value keeps the system's default on Linux too. Not a
	// single page: a pipe of one slot can hold a writer blocked behind a
	// few bytes of an earlier small message, which no fill level shows
	// (see pipes.Pipe.Full).
	PipeCapacity int
	// Within bounds each step of a criterion (a response, a blocked writer,
	// a second request). Default 5s.
	Within time.Duration
	// CancelGrace is how long work may go on after a cancel before it
	// counts as not stopped; it is also the observation window after it.
	// Default 200ms.
	CancelGrace time.Duration
	// ShutdownGrace is how long the server has to exit after stdin is closed
	// or after SIGTERM. Default 2s.
	ShutdownGrace time.Duration
	// Options are passed to every mcptest.Start, after the battery's own
	// (WithPipeCapacity, WithTimeout), so they can override them.
	Options []mcptest.Option
	// Run, if set, selects the criteria whose names it matches.
	Run *regexp.Regexp
}

func (c ServerConfig) withDefaults() ServerConfig {
	if c.OversizedRequest <= 0 {
		c.OversizedRequest = 32 << 20
	}
	if c.ContentBudget <= 0 {
		c.ContentBudget = 64 << 10
	}
	if c.Flood <= 0 {
		c.Flood = 500
	}
	if c.PipeCapacity == 0 && pipeCapacitySettable {
		c.PipeCapacity = 16 << 10
	}
	if c.Within <= 0 {
		c.Within = 5 * time.Second
	}
	if c.CancelGrace <= 0 {
		c.CancelGrace = 200 * time.Millisecond
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = 2 * time.Second
	}
	return c
}

// criterion is one named check of a battery. It returns the verdict and its
// evidence; the runner adds the name, duration and era.
type criterion struct {
	name string
	run  func(ctx context.Context, r *serverRun) Result
}

// serverRun is one criterion's fixture: the target, the configuration and
// the session the criterion starts.
type serverRun struct {
	target mcptest.Target
	cfg    ServerConfig
	sess   atomic.Pointer[mcptest.Session] // the watchdog reads it from another goroutine
}

// start starts a fresh session for the criterion.
func (r *serverRun) start(ctx context.Context, extra ...mcptest.Option) (*mcptest.Session, error) {
	opts := []mcptest.Option{
		mcptest.WithPipeCapacity(r.cfg.PipeCapacity),
		mcptest.WithTimeout(r.cfg.Within),
		// Closing is not what most criteria judge (the shutdown ones
		// wait for the exit themselves): do not wait long for it.
		mcptest.WithGrace(closeGrace),
	}
	opts = append(opts, r.cfg.Options...)
	opts = append(opts, extra...)
	s, err := mcptest.Start(ctx, r.target, opts...)
	if err != nil {
		return nil, err
	}
	r.sess.Store(s)
	return s, nil
}

// closeGrace is how long closing a criterion's session waits for the server
// to exit after closing its stdin, before escalating to signals.
const closeGrace = 200 * time.Millisecond

// ServerCriterionNames lists the criteria of ServerCriteria in the order they
// run.
func ServerCriterionNames() []string {
	var names []string
	for _, c := range serverCriteria {
		names = append(names, c.name)
	}
	return names
}

var serverCriteria = []criterion{
	{"stdout-clean", checkStdoutClean},
	{"invalid-json-input", checkInvalidJSONInput},
	{"oversized-input", checkOversizedInput},
	{"reads-while-blocked", checkReadsWhileBlocked},
	{"stall-cancel-recover", checkStallCancelRecover},
	{"cancel-before-work", checkCancelBeforeWork},
	{"cancel-during-work", checkCancelDuringWork},
	{"cancel-after-output-began", checkCancelAfterOutput},
	{"shutdown-stdin-eof", checkShutdownEOF},
	{"shutdown-sigterm", checkShutdownSIGTERM},
	{"result-bounded", checkResultBounded},
	{"era", checkEra},
}

// CheckServer runs the server release criteria against target, each with a
// fresh server started from it, and returns the report. It never fails
// itself: every problem, including a server that does not start, is a
// criterion's verdict. ctx bounds the whole run.
func CheckServer(ctx context.Context, target mcptest.Target, cfg ServerConfig) *Report {
	return CheckServerStream(ctx, target, cfg, nil)
}

// CheckServerStream is CheckServer that also calls progress with each result
// as soon as it is known, for a command that shows progress.
func CheckServerStream(ctx context.Context, target mcptest.Target, cfg ServerConfig, progress func(Result)) *Report {
	cfg = cfg.withDefaults()
	start := time.Now()
	rep := &Report{Subject: target.String()}
	for _, c := range serverCriteria {
		if cfg.Run != nil && !cfg.Run.MatchString(c.name) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		res := runServerCriterion(ctx, target, cfg, c)
		rep.Results = append(rep.Results, res)
		if progress != nil {
			progress(res)
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

// ServerCriteria runs the server release criteria against target as named
// subtests of t, each with a fresh server and a watchdog: a criterion that
// fails reports its evidence with t.Error, a skipped one t.Skip with the
// reason, a warning is logged. The target must be startable many times
// (Command, InProcess, Helper).
func ServerCriteria(t *testing.T, target mcptest.Target, cfg ServerConfig) {
	t.Helper()
	cfg = cfg.withDefaults()
	for _, c := range serverCriteria {
		if cfg.Run != nil && !cfg.Run.MatchString(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			res := runServerCriterion(testContext(t), target, cfg, c)
			reportResult(t, res)
		})
	}
}

// reportResult turns a criterion's result into the test's outcome.
func reportResult(t *testing.T, res Result) {
	t.Helper()
	msg := res.Evidence
	if res.Rule != "" {
		msg += "\nrule: " + res.Rule
	}
	if res.Details != "" {
		msg += "\n" + res.Details
	}
	switch res.Verdict {
	case Fail:
		t.Errorf("%s: %s", res.Name, msg)
	case Skip:
		t.Skipf("%s: %s", res.Name, msg)
	case Warn:
		t.Logf("%s: WARNING: %s", res.Name, msg)
	default:
		t.Logf("%s: %s", res.Name, res.Evidence)
	}
}

// runServerCriterion runs one criterion under a watchdog and always closes
// the session it started.
func runServerCriterion(ctx context.Context, target mcptest.Target, cfg ServerConfig, c criterion) Result {
	start := time.Now()
	r := &serverRun{target: target, cfg: cfg}
	// The watchdog: every step inside is bounded by cfg.Within, so a
	// criterion that runs past a generous multiple of it is stuck.
	limit := 8*cfg.Within + 4*cfg.ShutdownGrace + 4*cfg.CancelGrace + 3*oversizedAllowance(cfg)
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- c.run(cctx, r) }()
	var res Result
	select {
	case res = <-done:
	case <-cctx.Done():
		diag := "no session was started"
		if s := r.sess.Load(); s != nil {
			diag = s.Diagnose()
			s.Close()
		}
		// Every step is bounded by cctx, which has ended, and the session
		// is closed; a criterion that still does not return is stuck in
		// something else (a Target that ignores its context).
		select {
		case <-done:
		case <-time.After(cfg.Within + closeGrace + 10*time.Second):
			diag += "\nthe criterion itself did not return after the server was killed: its goroutine is left running"
		}
		if err := ctx.Err(); err != nil {
			res = Result{Verdict: Fail, Evidence: fmt.Sprintf("interrupted by the caller (%v)", err), Details: diag}
		} else {
			res = Result{Verdict: Fail, Evidence: fmt.Sprintf("criterion did not finish within %v: the watchdog killed the server", limit), Details: diag}
		}
	}
	if s := r.sess.Load(); s != nil {
		res.Era = s.ProtocolVersion()
		if err := s.Close(); err != nil && res.Verdict != Fail {
			res.Details = strings.TrimSpace(res.Details + "\nclosing the session: " + err.Error())
		}
	}
	res.Name = c.name
	res.Duration = time.Since(start)
	return res
}

func pass(format string, args ...any) Result {
	return Result{Verdict: Pass, Evidence: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) Result {
	return Result{Verdict: Skip, Evidence: fmt.Sprintf(format, args...)}
}

// failErr makes a failing result from err, keeping the first line as
// evidence and the rest (a diagnosis) as details.
func failErr(what string, err error) Result {
	msg := err.Error()
	first, rest, _ := strings.Cut(msg, "\n")
	return Result{Verdict: Fail, Evidence: what + ": " + first, Details: rest}
}

func startFailed(err error) Result { return failErr("the server did not start", err) }

// cheap makes the criteria's "second request".
func (r *serverRun) cheap(ctx context.Context) error {
	return checkCheap(ctx, r.sess.Load(), r.cfg.Within, r.cfg.Cheap)
}

func checkStdoutClean(ctx context.Context, r *serverRun) Result {
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	steps := []string{"handshake (" + s.ProtocolVersion() + ")"}
	if _, err := s.Call(ctx, wire.MethodToolsList, map[string]any{}); err != nil {
		return failErr("tools/list", err)
	}
	steps = append(steps, "tools/list")
	call := r.cfg.Cheap
	if call == nil {
		call = r.cfg.Large
	}
	if call != nil {
		if _, err := s.Call(ctx, wire.MethodToolsCall, call.params(nil)); err != nil {
			var rpc *wire.RPCError
			if !errors.As(err, &rpc) { // an error result is still JSON-RPC on stdout
				return failErr("tools/call "+call.Name, err)
			}
		}
		steps = append(steps, "tools/call "+call.Name)
	}
	if err := CheckStdoutClean(s); err != nil {
		res := failErr("after "+strings.Join(steps, ", "), err)
		res.Rule = "stdio: the server MUST NOT write anything to its stdout that is not a valid MCP message"
		return res
	}
	st := s.Stats()
	return pass("%d frames, %d bytes, all JSON-RPC, through %s", st.Frames, st.StdoutBytes, strings.Join(steps, ", "))
}

// invalidJSONLine is a line that is not JSON: an unterminated object.
const invalidJSONLine = `{"jsonrpc":"2.0","id":` + "\"mcpstdio-bad\",\"method\":tools/list}\n"

func checkInvalidJSONInput(ctx context.Context, r *serverRun) Result {
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	before := s.Stats()
	if err := s.WriteStdin(ctx, []byte(invalidJSONLine)); err != nil {
		return failErr("writing an invalid JSON line to stdin", err)
	}
	if err := r.cheap(ctx); err != nil {
		return failErr("after an invalid JSON line", err)
	}
	after := s.Stats()
	answer := "silence"
	if n := after.UnknownIDs - before.UnknownIDs; n > 0 {
		answer = fmt.Sprintf("%d error response(s)", n)
	}
	return pass("invalid JSON line answered with %s; the next request completed", answer)
}

func checkOversizedInput(ctx context.Context, r *serverRun) Result {
	// Reading and rejecting a huge line takes time in proportion to its
	// size: allow 250ms per MiB on top of the usual bound, so that a slow
	// but sound server is not taken for a stuck one.
	bound := r.cfg.Within + oversizedAllowance(r.cfg)
	s, err := r.start(ctx, mcptest.WithTimeout(bound))
	if err != nil {
		return startFailed(err)
	}
	line := oversizedRequest(r.cfg.OversizedRequest)
	begin := time.Now()
	if err := s.WriteStdin(ctx, line); err != nil {
		return failErr(fmt.Sprintf("writing a %d-byte request line to stdin", len(line)), err)
	}
	wrote := time.Since(begin)
	if err := checkCheap(ctx, s, bound, r.cfg.Cheap); err != nil {
		res := failErr(fmt.Sprintf("after a %d-byte request line", len(line)), err)
		res.Rule = "a frame over the server's limit is a transport error for that frame, not the end of the session"
		return res
	}
	mem := "peak memory unknown"
	if kb, err := peakMemoryKB(s.PID()); err == nil {
		mem = fmt.Sprintf("peak memory (VmHWM) %d KiB", kb)
	}
	return pass("%d-byte request line accepted in %v and survived; the next request completed; %s", len(line), wrote.Round(time.Millisecond), mem)
}

// oversizedAllowance is the time oversized-input grants beyond Within:
// 250ms per MiB of the line.
func oversizedAllowance(cfg ServerConfig) time.Duration {
	return time.Duration(cfg.OversizedRequest>>20) * 250 * time.Millisecond
}

// oversizedRequest returns a well-formed tools/call request line of size
// bytes, newline included: big, not broken, so only its size is at issue.
func oversizedRequest(size int) []byte {
	head := []byte(`{"jsonrpc":"2.0","id":"mcpstdio-oversized","method":"tools/call","params":{"name":"mcpstdio-oversized","arguments":{"pad":"`)
	tail := []byte(`"}}}` + "\n")
	n := max(size-len(head)-len(tail), 0)
	b := make([]byte, 0, len(head)+n+len(tail))
	b = append(b, head...)
	for range n {
		b = append(b, 'x')
	}
	return append(b, tail...)
}

func checkReadsWhileBlocked(ctx context.Context, r *serverRun) Result {
	if r.cfg.Large == nil {
		return skip("no Large tool call configured")
	}
	// Room for every flood response: they arrive in one burst on resume.
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	s.StallReads()
	big := s.Send(wire.MethodToolsCall, r.cfg.Large.params(nil))
	if err := s.WaitWriterBlocked(ctx); err != nil {
		return failErr("the large call did not block the server's stdout", err)
	}
	before := s.Stats().StdinBytes
	begin := time.Now()
	flood := make([]*mcptest.Pending, 0, r.cfg.Flood)
	for i := range r.cfg.Flood {
		p := s.Send(pingMethod(s), nil)
		flood = append(flood, p)
		select {
		case <-p.Done():
			if _, err := p.Wait(ctx); err != nil {
				res := failErr(fmt.Sprintf("stdin write %d of %d failed while the server's stdout was blocked", i+1, r.cfg.Flood), err)
				res.Rule = "the server's stdin reader must not wait on its stdout writes"
				return res
			}
		default:
		}
	}
	sent := s.Stats().StdinBytes - before
	took := time.Since(begin)
	s.ResumeReads()
	resp, err := big.Wait(ctx)
	if err != nil {
		return failErr("the large response after resuming reads", err)
	}
	if res, bad := notLarge(s, resp, r.cfg); bad {
		return res
	}
	for _, p := range flood {
		if _, err := p.Wait(ctx); err != nil {
			return failErr("a flood request after resuming reads", err)
		}
	}
	return pass("%d requests (%d bytes) accepted on stdin in %v while stdout was blocked (%s); all answered after resuming", r.cfg.Flood, sent, took.Round(time.Millisecond), s.Stats().WriterEvidence)
}

// notLarge fails a criterion whose Large call did not produce a response
// larger than the pipe: then a "blocked writer" may have been a short
// response sitting in a small pipe, and the criterion proved nothing.
func notLarge(s *mcptest.Session, resp *mcptest.Response, cfg ServerConfig) (Result, bool) {
	capacity := s.Stats().WriterEvidence.Capacity // what the pipe really was
	switch {
	case resp.Error != nil:
		return Result{Verdict: Fail, Evidence: fmt.Sprintf("the Large call (%s) failed: %v: configure a call that returns a large result", cfg.Large, resp.Error)}, true
	case len(resp.Result) <= capacity:
		return Result{Verdict: Fail, Evidence: fmt.Sprintf("the Large call (%s) returned only %d bytes, not more than the %d-byte stdout pipe: configure a larger result", cfg.Large, len(resp.Result), capacity)}, true
	}
	return Result{}, false
}

// pingMethod is the cheapest request of the session's era.
func pingMethod(s *mcptest.Session) string {
	if wire.IsModern(s.ProtocolVersion()) {
		return wire.MethodDiscover
	}
	return wire.MethodPing
}

func checkStallCancelRecover(ctx context.Context, r *serverRun) Result {
	if r.cfg.Large == nil {
		return skip("no Large tool call configured")
	}
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	before := s.Stats().StdoutBytes
	s.StallReads()
	big := s.Send(wire.MethodToolsCall, r.cfg.Large.params(nil))
	if err := s.WaitWriterBlocked(ctx); err != nil {
		return failErr("the large call did not block the server's stdout", err)
	}
	blocked := s.Stats().WriterEvidence
	evidence := blocked.String()
	if err := big.Cancel("mcpstdio: result exceeded the client budget"); err != nil {
		res := failErr("sending notifications/cancelled while the server's stdout was blocked", err)
		res.Rule = "the server's stdin reader must not wait on its stdout writes"
		return res
	}
	s.ResumeReads()
	if err := r.cheap(ctx); err != nil {
		return failErr("stall → large call → writer blocked → cancel → resume", err)
	}
	// A writer that was really blocked had more than a pipeful to write, and
	// bytes handed to write(2) cannot be recalled: more than the pipe held
	// must have arrived. Otherwise a short response sat in the pipe.
	if got := s.Stats().StdoutBytes - before; blocked.Capacity > 0 && got <= int64(blocked.Capacity) {
		return Result{Verdict: Fail, Evidence: fmt.Sprintf("only %d bytes arrived after the \"blocked\" writer was released, no more than the %d-byte stdout pipe holds: the Large call (%s) did not produce a large enough response to block the server; configure a larger one", got, blocked.Capacity, r.cfg.Large)}
	}
	late := "no response to the cancelled call (suppressed, or still to come)"
	select {
	case <-big.Done():
		switch resp, err := big.Wait(ctx); {
		case err != nil:
			late = "the cancelled call ended with: " + firstLine(err.Error())
		case resp.Late:
			late = "the cancelled call's response arrived late (tolerated)"
		default:
			late = "the large response had arrived before the cancel"
		}
	default:
	}
	return pass("writer blocked (%s); after cancel and resume the second request completed; %s", evidence, late)
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// responseAfterCancel turns "a response arrived after an early cancel" into
// the verdict of the negotiated era.
func responseAfterCancel(era, what string) Result {
	if wire.IsModern(era) {
		return Result{Verdict: Fail, Evidence: what,
			Rule: "2026-07-28 stdio: after notifications/cancelled the server MUST NOT send any further messages for that request"}
	}
	return Result{Verdict: Warn, Evidence: what,
		Rule: era + " cancellation: receivers of notifications/cancelled SHOULD NOT send a response for the cancelled request"}
}

// stopFailure is the verdict for work that went on after a cancel: a MUST
// NOT in the 2026-07-28 stdio transport, a SHOULD before it.
func stopFailure(era, what string, err error) Result {
	res := failErr(what, err)
	var wc *WorkContinuedError
	if !errors.As(err, &wc) {
		return res // the check itself could not be done: that is no SHOULD
	}
	if wire.IsModern(era) {
		res.Rule = "2026-07-28 stdio: after notifications/cancelled the server MUST NOT send any further messages for that request"
	} else {
		res.Verdict = Warn
		res.Rule = era + " cancellation: the server SHOULD stop processing the cancelled request"
	}
	return res
}

// startSlow starts a session and sends the Slow call with a progress token
// of its own; ok is false, with the result to report, if it cannot.
func (r *serverRun) startSlow(ctx context.Context) (s *mcptest.Session, p *mcptest.Pending, res Result, ok bool) {
	if r.cfg.Slow == nil {
		return nil, nil, skip("no Slow tool call configured"), false
	}
	s, err := r.start(ctx)
	if err != nil {
		return nil, nil, startFailed(err), false
	}
	return s, s.Send(wire.MethodToolsCall, r.cfg.Slow.params(newProgressToken())), Result{}, true
}

// lateResponse is the verdict when a response to the cancelled request p
// has arrived (ok false if none has): what, then the error it carried.
func lateResponse(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, what string) (Result, bool) {
	if !responded(p) {
		return Result{}, false
	}
	resp, _ := p.Wait(ctx)
	if resp.Error != nil {
		what += fmt.Sprintf(" (error %d %q)", resp.Error.Code, resp.Error.Message)
	}
	return responseAfterCancel(s.ProtocolVersion(), what), true
}

func checkCancelBeforeWork(ctx context.Context, r *serverRun) Result {
	// Request and cancel back to back, before the server can have done
	// any work worth speaking of.
	s, p, res, ok := r.startSlow(ctx)
	if !ok {
		return res
	}
	if err := CheckCancelStopsWork(ctx, s, p, r.cfg.CancelGrace); err != nil {
		return stopFailure(s.ProtocolVersion(), "after notifications/cancelled sent right behind the request", err)
	}
	if err := r.cheap(ctx); err != nil {
		return failErr("second request after an early cancel", err)
	}
	if res, late := lateResponse(ctx, s, p, "a response to the cancelled request arrived"); late {
		return res
	}
	return pass("no response after the cancel; the second request completed")
}

func checkCancelDuringWork(ctx context.Context, r *serverRun) Result {
	s, p, res, ok := r.startSlow(ctx)
	if !ok {
		return res
	}
	// Cancel once the work shows progress, or after a short while if it
	// sends none.
	wctx, wcancel := context.WithTimeout(ctx, min(r.cfg.Within, 10*r.cfg.CancelGrace))
	for p.Progress() == 0 && !responded(p) {
		if _, err := s.WaitNotification(wctx, wire.MethodProgress); err != nil {
			break
		}
	}
	wcancel()
	evidence := "no progress notifications: judged by the response alone"
	switch {
	case ended(p) && !responded(p):
		_, err := p.Wait(ctx)
		return failErr("the Slow call failed before it could be cancelled", err)
	case responded(p):
		return Result{Verdict: Fail, Evidence: "the Slow call finished before it could be cancelled; configure a slower call"}
	case p.Progress() > 0:
		evidence = "progress seen before the cancel"
	}
	if err := CheckCancelStopsWork(ctx, s, p, r.cfg.CancelGrace); err != nil {
		return stopFailure(s.ProtocolVersion(), "after notifications/cancelled during the work", err)
	}
	if err := r.cheap(ctx); err != nil {
		return failErr("second request after the cancel", err)
	}
	if res, late := lateResponse(ctx, s, p, fmt.Sprintf("the work stopped (%s), but a response to the cancelled request arrived within the grace period", evidence)); late {
		return res
	}
	return pass("the work stopped within %v of the cancel (%s); no response; the second request completed", r.cfg.CancelGrace, evidence)
}

func checkCancelAfterOutput(ctx context.Context, r *serverRun) Result {
	if r.cfg.Large == nil {
		return skip("no Large tool call configured")
	}
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	before := s.Stats().StdoutBytes
	// Let a little of the response through, then cancel while the rest is
	// still being written.
	s.StallReadsAfter(1024)
	p := s.Send(wire.MethodToolsCall, r.cfg.Large.params(nil))
	if err := s.WaitStdoutBytes(ctx, before+1024); err != nil {
		return failErr("the large response did not begin", err)
	}
	if err := p.Cancel("mcpstdio: cancelled after the response began"); err != nil {
		return failErr("sending notifications/cancelled while the response was being written", err)
	}
	s.ResumeReads()
	if err := r.cheap(ctx); err != nil {
		return failErr("second request after cancelling a response in flight", err)
	}
	outcome := "no response to the cancelled request"
	select {
	case <-p.Done():
		resp, err := p.Wait(ctx)
		switch {
		case err != nil:
			outcome = "the cancelled request ended with: " + firstLine(err.Error())
		case resp.Late:
			outcome = "its response arrived complete, counted as late"
		}
	default:
	}
	return pass("cancelled after %d bytes of the response; %s; the second request completed", s.Stats().StdoutBytes-before, outcome)
}

func checkShutdownEOF(ctx context.Context, r *serverRun) Result {
	return checkShutdown(ctx, r, "stdin was closed", (*mcptest.Session).CloseStdin,
		"stdio: servers SHOULD exit promptly when their standard input is closed")
}

func checkShutdownSIGTERM(ctx context.Context, r *serverRun) Result {
	return checkShutdown(ctx, r, "SIGTERM", func(s *mcptest.Session) error { return s.Signal(syscall.SIGTERM) },
		"stdio: a client force-terminates with SIGTERM before SIGKILL; a server SHOULD exit on it")
}

// checkShutdown asks the server to end with trigger and gives it the
// shutdown grace to do so; not ending is a SHOULD-level warning.
func checkShutdown(ctx context.Context, r *serverRun, what string, trigger func(*mcptest.Session) error, rule string) Result {
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	begin := time.Now()
	if err := trigger(s); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return skip("%s does not apply to this target (%v)", what, err)
		}
		return failErr("shutting down with "+what, err)
	}
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ShutdownGrace)
	defer cancel()
	exit, err := s.WaitExit(wctx)
	if err != nil {
		return Result{Verdict: Warn, Evidence: fmt.Sprintf("still running %v after %s", r.cfg.ShutdownGrace, what), Rule: rule}
	}
	return pass("exited %v after %s (%s)", time.Since(begin).Round(time.Millisecond), what, exit)
}

func checkEra(ctx context.Context, r *serverRun) Result {
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	v := s.ProtocolVersion()
	// A round trip, so anything the server sends unprompted has arrived.
	if err := r.cheap(ctx); err != nil {
		return failErr("round trip after negotiation", err)
	}
	if n := s.Stats().ProtocolViolations; n > 0 && wire.IsModern(v) {
		return Result{Verdict: Fail, Evidence: fmt.Sprintf("negotiated %s, and the server wrote %d request(s) on stdout", v, n),
			Rule: "2026-07-28 stdio: the server MUST NOT write JSON-RPC requests to stdout"}
	}
	era := "legacy: the server/discover probe got no modern answer, so the initialize handshake"
	if wire.IsModern(v) {
		era = "modern: the server answered the server/discover probe"
	}
	return pass("negotiated %s (%s); no server-to-client requests on stdout", v, era)
}

func checkResultBounded(ctx context.Context, r *serverRun) Result {
	if r.cfg.Bounded == nil {
		return skip("no Bounded tool call configured")
	}
	s, err := r.start(ctx)
	if err != nil {
		return startFailed(err)
	}
	resp, err := s.Call(ctx, wire.MethodToolsCall, r.cfg.Bounded.params(nil))
	if err != nil {
		return failErr("tools/call "+r.cfg.Bounded.Name, err)
	}
	if err := CheckResultBounded(resp.Result, r.cfg.ContentBudget); err != nil {
		res := failErr("tools/call "+r.cfg.Bounded.String(), err)
		res.Rule = "result contract: a tool bounds its content before serialization and says what was omitted and how to continue"
		return res
	}
	return pass("result of %d bytes keeps to the %d-byte content budget and the contract", len(resp.Result), r.cfg.ContentBudget)
}
