package assertions

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ServerConfig configures the server criteria: the tool calls they need
// and the bounds. A criterion whose call is not configured is skipped, with
// the reason. The zero value runs what needs no tool call.
type ServerConfig struct {
	// Large is a tools/call whose response is much larger than the pipe
	// capacity (a few hundred KiB is plenty with the default 16 KiB pipes).
	Large *ToolCall
	// Slow is a tools/call that works for a while unless cancelled and
	// honours cancellation. If it sends progress notifications when the
	// request carries a progressToken, the cancel criteria use them as
	// evidence; so do (Linux, child servers) its CPU time and the processes
	// it starts.
	Slow *ToolCall
	// SlowDuration is how long the Slow call works when not cancelled, if
	// known. After a cancel the cancel criteria watch this long (at most
	// 4×Within) for a late response, and "no response within the call's
	// own duration" is then evidence that the work stopped. Zero: unknown;
	// the criteria watch for 5×CancelGrace.
	SlowDuration time.Duration
	// Bounded is a tools/call that could return a lot (a search over many
	// records); the result contract says it returns a bounded page and
	// says how to continue. See CheckResultContract.
	Bounded *ToolCall
	// ContentBudget is the content budget in bytes the Bounded call's
	// result must fit. Default 64 KiB.
	ContentBudget int
	// CancelAfter is how many bytes of the Large call's response
	// cancel-after-output-began lets through before it holds reads and
	// cancels. Default 32 KiB; a response shorter than that is a skip.
	CancelAfter int
	// Cheap is the small request of "a second request completes", and what
	// reads-while-blocked floods stdin with. Nil means Session.Ping (ping or
	// server/discover, by era) for the second request, and a tools/call of
	// a tool that does not exist for the flood: either way the flood goes
	// through the server's tool-call path.
	Cheap *ToolCall

	// OversizedRequest is the size in bytes of the oversized request line
	// sent to stdin. Default 32 MiB. Its criterion allows Within plus 250ms
	// per MiB for the server to read it and answer the next request.
	OversizedRequest int
	// Flood is the least number of tools/call requests written to stdin
	// while the server's stdout is blocked; more are written if needed to
	// make the flood at least 8 times the stdin pipe's capacity in bytes.
	// Default 500.
	Flood int
	// PipeCapacity is the capacity of the stdin and stdout pipes. Default
	// (0) 16 KiB on Linux, so that modest responses block the writer;
	// elsewhere the capacity cannot be set and the system's default is
	// used. A negative value keeps the system's default on Linux too. Not a
	// single page: a pipe of one slot can hold a writer blocked behind a
	// few bytes of an earlier small message, which no fill level shows
	// (see pipes.EffectivelyFull).
	PipeCapacity int
	// Within bounds each step of a criterion (a response, a blocked writer,
	// a second request); it is each criterion's session's
	// mcptest.WithTimeout (oversized-input's adds its allowance). Default
	// 5s.
	Within time.Duration
	// CancelGrace is how long work may go on after a cancel before it
	// counts as not stopped. Default 200ms.
	CancelGrace time.Duration
	// ShutdownGrace is how long the server has to exit after stdin is
	// closed or after SIGTERM, and how long each criterion's server is
	// given at each step of closing it (mcptest.WithGrace). Default 2s.
	ShutdownGrace time.Duration
	// StartTimeout bounds starting the server and negotiating MCP, for the
	// battery's first start and for each criterion's; it is never counted
	// in Within. Default 30s.
	StartTimeout time.Duration
	// Protocol, if set, pins the protocol version every session uses
	// (mcptest.WithProtocolVersion): a 2026-07-28 one without a handshake,
	// an older one offered in initialize.
	Protocol string
	// Options are passed to every mcptest.Start, after the battery's own
	// (WithTimeout, WithGrace, WithPipeCapacity), so they can override
	// them.
	Options []mcptest.Option
	// Run, if set, selects the criteria whose names it matches.
	Run *regexp.Regexp
	// Expect names the verdicts a server is known to get: a criterion with
	// the verdict Expect names is reported but does not fail the battery,
	// and a criterion whose verdict differs from it (even a failure that
	// now passes) fails with "update Expect", so that expectations stay
	// true. Keys are criterion names (ServerCriterionNames).
	Expect map[string]Verdict

	start *serverStart                                    // what the battery's first start learned
	fresh func(context.Context) (*mcptest.Session, error) // starts another session of the criterion's server
}

// withDefaults fills the zero fields with the defaults the fields' docs
// name.
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
	if c.CancelAfter <= 0 {
		c.CancelAfter = 32 << 10
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
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
	}
	return c
}

// cancelWatch is how long, after the grace, the cancel criteria watch for
// work going on.
func (c ServerConfig) cancelWatch() time.Duration {
	if c.SlowDuration > 0 {
		return min(c.SlowDuration, 4*c.Within)
	}
	return 5 * c.CancelGrace
}

// options are the session options of a criterion: the battery's, then the
// caller's.
func (c ServerConfig) options(extra ...mcptest.Option) []mcptest.Option {
	opts := []mcptest.Option{
		mcptest.WithTimeout(c.Within),
		mcptest.WithGrace(c.ShutdownGrace),
	}
	if c.PipeCapacity > 0 {
		opts = append(opts, mcptest.WithPipeCapacity(c.PipeCapacity))
	}
	opts = append(opts, extra...)
	return append(opts, c.Options...)
}

// ToolCall names a tools/call request: the tool and its arguments.
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// String formats the call as the command line takes it: name, then the
// arguments as JSON if there are any.
func (c *ToolCall) String() string {
	if len(c.Arguments) == 0 {
		return c.Name
	}
	args, _ := json.Marshal(c.Arguments)
	return fmt.Sprintf("%s %s", c.Name, args)
}

// describe names the call for evidence: as String does, but with
// arguments over 200 bytes given by their size, so that a Large call's
// arguments do not fill the line.
func (c *ToolCall) describe() string {
	if c == nil {
		return "none"
	}
	args, _ := json.Marshal(c.Arguments)
	if len(c.Arguments) == 0 || len(args) <= 200 {
		return c.String()
	}
	return fmt.Sprintf("%s with %d bytes of arguments", c.Name, len(args))
}

// params returns tools/call params, with a progress token if token is set.
func (c *ToolCall) params(token any) map[string]any {
	p := map[string]any{"name": c.Name}
	if c.Arguments != nil {
		p["arguments"] = c.Arguments
	}
	if token != nil {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return p
}

// serverFixture is one criterion's target and the session it starts.
type serverFixture struct {
	target mcptest.Target
	cfg    ServerConfig
	sess   atomic.Pointer[mcptest.Session] // the watchdog reads it from another goroutine
}

// start starts the criterion's session.
func (f *serverFixture) start(ctx context.Context, extra ...mcptest.Option) (*mcptest.Session, error) {
	extra = append(f.cfg.start.options(f.cfg), extra...)
	s, err := mcptest.Start(ctx, f.target, f.cfg.options(extra...)...)
	if err != nil {
		return nil, err
	}
	f.sess.Store(s)
	return s, nil
}

func (f *serverFixture) diagnose() string {
	if s := f.sess.Load(); s != nil {
		return s.Diagnose()
	}
	return "no session was started"
}

func (f *serverFixture) abort() {
	if s := f.sess.Load(); s != nil {
		s.Close()
	}
}

func (f *serverFixture) close() (string, error) {
	s := f.sess.Load()
	if s == nil {
		return "", nil
	}
	err := s.Close()
	ex := s.Stats().Exit
	forced := ""
	if ex.How == mcptest.ExitForced || ex.How == mcptest.ExitStuck {
		forced = closedHow(ex)
	}
	if len(ex.Escaped) > 0 {
		note := "the server left " + strings.Join(ex.Escaped, ", ") + " running outside its process group (setsid): killed"
		if err != nil {
			note += "; closing: " + err.Error()
		}
		return forced, leftBehind(note)
	}
	return forced, err
}

// closedHow says, for evidence, how a server that did not end when its
// stdin closed was ended: "it did not exit within the grace after stdin
// closed; SIGTERM ended it (exit code 0)".
func closedHow(ex mcptest.Exit) string {
	if ex.How == mcptest.ExitStuck {
		return "it did not end even after " + strings.Join(ex.Signals, ", ") + " (" + ex.String() + ")"
	}
	by := "a signal"
	if n := len(ex.Signals); n > 0 {
		by = ex.Signals[n-1]
	}
	how := "exit code " + fmt.Sprint(ex.Code)
	if ex.Signal != "" {
		how = "killed by " + ex.Signal
	}
	return fmt.Sprintf("it did not exit within the grace after stdin closed; %s ended it (%s)", by, how)
}

// serverCriterion makes a criterion that starts a session with the
// battery's options (and extra ones) and runs check on it. A result that
// names no rule of its own (a pass, a skip) gets the criterion's, for the
// negotiated era, so that every verdict says what was checked.
func serverCriterion(name string, rule func(era string) string, check func(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result, extra func(ServerConfig) []mcptest.Option) criterion[*serverFixture] {
	return criterion[*serverFixture]{name: name, run: func(ctx context.Context, f *serverFixture) Result {
		var opts []mcptest.Option
		if extra != nil {
			opts = extra(f.cfg)
		}
		s, err := f.start(ctx, opts...)
		if err != nil {
			res := failErr("", "the server did not start", err)
			res.Rule = rule("")
			return res
		}
		cfg := f.cfg
		cfg.fresh = func(ctx context.Context) (*mcptest.Session, error) {
			return mcptest.Start(ctx, f.target, f.cfg.options(append(f.cfg.start.options(f.cfg), opts...)...)...)
		}
		res := unseenBound(slowIsWarn(check(ctx, s, cfg)), threadsSeen(s))
		res.Era = s.ProtocolVersion()
		if res.Era == "" && f.cfg.start != nil { // a session without a handshake
			res.Era = f.cfg.start.version
		}
		if res.Rule == "" {
			res.Rule = rule(res.Era)
		}
		return res
	}}
}

// always is the rule of a criterion whose rule does not depend on the era.
func always(rule string) func(string) string { return func(string) string { return rule } }

var serverCriteria = []criterion[*serverFixture]{
	serverCriterion("stdout-clean", always(ruleStdoutClean), CheckStdoutClean, nil),
	serverCriterion("invalid-json-input", always(ruleInvalidJSON), CheckInvalidJSONInput, nil),
	serverCriterion("crlf-input", always(ruleCRLFInput), CheckCRLFInput, nil),
	serverCriterion("oversized-input", always(ruleOversizedInput), CheckOversizedInput, func(cfg ServerConfig) []mcptest.Option {
		return []mcptest.Option{mcptest.WithTimeout(cfg.Within + oversizedAllowance(cfg))}
	}),
	serverCriterion("reads-while-blocked", always(ruleReadsBlocked), CheckReadsWhileBlocked, nil),
	serverCriterion("stall-cancel-recover", always(ruleSecondRequest), CheckStallCancelRecover, nil),
	serverCriterion("cancel-before-work", cancelRule, CheckCancelBeforeWork, nil),
	serverCriterion("cancel-during-work", cancelRule, CheckCancelDuringWork, nil),
	serverCriterion("cancel-after-output-began", always(ruleCancelAfter), CheckCancelAfterOutputBegan, nil),
	serverCriterion("shutdown-stdin-eof", always(ruleShutdownEOF), CheckShutdownStdinEOF, nil),
	serverCriterion("eof-drains-pending", always(ruleEOFDrains), CheckEOFDrainsPending, func(ServerConfig) []mcptest.Option {
		// Answers are found by their id in the transcript's heads: keep
		// heads long enough for an id written last (the TypeScript SDK's
		// initialize answer is 2 KiB, its id at the end).
		return []mcptest.Option{mcptest.WithoutHandshake(), mcptest.Limits{Head: 64 << 10}}
	}),
	serverCriterion("shutdown-sigterm", always(ruleShutdownTERM), CheckShutdownSIGTERM, nil),
	serverCriterion("host-gone", always(ruleHostGone), CheckHostGone, nil),
	serverCriterion("result-bounded", always(ruleResultContract), CheckResultBounded, nil),
	serverCriterion("era", always(ruleEra), CheckEra, nil),
}

// ServerCriterionNames lists the server criteria in the order they run.
func ServerCriterionNames() []string {
	return (&battery[*serverFixture]{criteria: serverCriteria}).names()
}

func serverBattery(target mcptest.Target, cfg ServerConfig) *battery[*serverFixture] {
	cfg = cfg.withDefaults()
	return &battery[*serverFixture]{
		subject:  target.String(),
		criteria: serverCriteria,
		start: func(ctx context.Context) Result {
			st, res := startOnce(ctx, target, cfg)
			cfg.start = st
			return res
		},
		fixture: func(string) *serverFixture { return &serverFixture{target: target, cfg: cfg} },
		budget: func(name string) time.Duration {
			// Every step inside is bounded by Within (or the shutdown and
			// cancel windows): a criterion past a generous multiple of them
			// is stuck.
			b := cfg.StartTimeout + 8*cfg.Within + 4*cfg.ShutdownGrace + 8*cfg.CancelGrace + 2*cfg.cancelWatch()
			switch name {
			case "oversized-input":
				b += 2 * oversizedAllowance(cfg)
			case "eof-drains-pending": // fresh sessions after the first, started within Within
				b += cfg.StartTimeout + cfg.Within + cfg.ShutdownGrace
			case "reads-while-blocked": // the flood up to its cap, and the control flood on a fresh server
				b += cfg.StartTimeout + 2*cfg.floodCap()
			}
			return b
		},
		run:    cfg.Run,
		expect: cfg.Expect,
	}
}

// CheckServer runs the server release criteria against target, each with a
// fresh server started from it under a watchdog, and returns the report. It
// never fails itself: every problem, including a server that does not
// start, is a criterion's verdict (a server that does not start fails
// "start", the report's only result). ctx bounds the whole run. The target
// must be startable many times (Command, GoBuild, InProcess, Helper; not
// Exec).
func CheckServer(ctx context.Context, target mcptest.Target, cfg ServerConfig) *Report {
	return CheckServerStream(ctx, target, cfg, nil)
}

// CheckServerStream is CheckServer that also calls progress (if not nil)
// with each result as soon as it is known, first with "start": the result
// of the battery's first start, a pass saying how long it took (which the
// report leaves out) or the failure that is then the report's only result.
func CheckServerStream(ctx context.Context, target mcptest.Target, cfg ServerConfig, progress func(Result)) *Report {
	return serverBattery(target, cfg).all(ctx, progress)
}

// ServerCriteria runs the server release criteria against target as named
// subtests of t, each with a fresh server and a watchdog: a criterion that
// fails reports its evidence with t.Error, a skipped one t.Skip with the
// reason, a warning (a log line that starts with WARN) or an expected
// verdict (Expect) is logged. The target must be startable many times
// (Command, GoBuild, InProcess, Helper; not Exec).
func ServerCriteria(t *testing.T, target mcptest.Target, cfg ServerConfig) {
	t.Helper()
	serverBattery(target, cfg).tests(t)
}

// pingMethod is the cheapest request of the session's era.
func pingMethod(s *mcptest.Session) string {
	if isModernEra(s.ProtocolVersion()) {
		return wire.MethodDiscover
	}
	return wire.MethodPing
}

func isModernEra(v string) bool { return wire.IsModern(v) }

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
