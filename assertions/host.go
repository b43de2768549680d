package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Host is an MCP client under test, adapted to the battery: it talks to the
// server it was started against over that server's stdio.
type Host interface {
	// CallTool calls the named tool and returns the raw tools/call result,
	// or an error. When ctx is cancelled during the call, the host is
	// expected to send notifications/cancelled for it and return.
	CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error)
	// Close ends the host's session and stops the server it started.
	Close() error
}

// HostFactory starts a host against the server that cmd runs: the host must
// start cmd itself (with its own stdin, stdout and stderr handling, which is
// part of what is tested) and be ready to call tools when it returns.
type HostFactory func(ctx context.Context, cmd *exec.Cmd) (Host, error)

// HostConfig configures HostCriteria and CheckHost.
type HostConfig struct {
	// MaxFrame is the host's transport limit: the most bytes of one
	// JSON-RPC message it accepts. Zero skips the two criteria about it.
	MaxFrame int
	// Within bounds each call the battery makes. Default 10s.
	Within time.Duration
	// HugeField is the size in bytes of the response that is one huge text
	// field. Default 8 MiB, or less under a MaxFrame: at most 64 KiB under
	// it and at most half of it (at least 1 KiB).
	HugeField int
	// Blocks is the number of small content blocks, 64 bytes of text each
	// (about 110 on the wire). Default 10000, or as many as fit 64 KiB
	// under MaxFrame.
	Blocks int
	// StderrNoise is how many bytes the fake writes to stderr. Default 64 MiB.
	StderrNoise int64
	// IdleNotifications is how many bytes of notifications the fake writes
	// while the host is idle. Default 1 MiB.
	IdleNotifications int64
	// Run, if set, selects the criteria whose names it matches.
	Run *regexp.Regexp
}

func (c HostConfig) withDefaults() HostConfig {
	if c.Within <= 0 {
		c.Within = 10 * time.Second
	}
	if c.HugeField <= 0 {
		c.HugeField = 8 << 20
		if c.MaxFrame > 0 {
			// Well under the limit, and never below what a frame needs.
			c.HugeField = max(min(c.HugeField, c.MaxFrame-64<<10, c.MaxFrame/2), 1024)
		}
	}
	if c.Blocks <= 0 {
		c.Blocks = 10000
		if c.MaxFrame > 0 {
			c.Blocks = max(min(c.Blocks, (c.MaxFrame-64<<10)/128), 1)
		}
	}
	if c.StderrNoise <= 0 {
		c.StderrNoise = 64 << 20
	}
	if c.IdleNotifications <= 0 {
		c.IdleNotifications = 1 << 20
	}
	return c
}

// fakeHelper is the name under which this package registers the fake as an
// mcptest helper, for the hosts under test to start as a child.
const fakeHelper = "mcpstdio-assertions-fake"

func init() {
	mcptest.RegisterHelper(fakeHelper, func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// hostRun is one host criterion's fixture: a fresh fake and a fresh host.
type hostRun struct {
	kill    context.CancelFunc // kills the fake
	cfg     HostConfig
	newHost HostFactory
	dir     string
	name    string
	host    Host
	cmd     *exec.Cmd
	report  string
}

// start starts the fake with the given flags and a host against it.
func (r *hostRun) start(ctx context.Context, flags ...string) error {
	r.report = filepath.Join(r.dir, r.name+".json")
	flags = append([]string{"-report", r.report}, flags...)
	// The fake is killed when the criterion ends, whatever the host does.
	cmd, err := mcptest.HelperCommand(ctx, fakeHelper, flags...)
	if err != nil {
		return err
	}
	r.cmd = cmd
	type started struct {
		h   Host
		err error
	}
	done := make(chan started, 1)
	go func() {
		h, err := r.newHost(ctx, r.cmd)
		done <- started{h, err}
	}()
	t := time.NewTimer(r.cfg.Within)
	defer t.Stop()
	select {
	case s := <-done:
		r.host = s.h // closed at the end even if it failed to get ready
		if s.err != nil {
			return fmt.Errorf("starting the host against the fake (%s): %w", strings.Join(flags, " "), s.err)
		}
		return nil
	case <-t.C:
	}
	r.kill() // unblocks a host stuck reading the fake
	select {
	case s := <-done:
		if s.h != nil {
			r.host = s.h
		}
	case <-time.After(5 * time.Second):
	}
	return fmt.Errorf("starting the host against the fake (%s): the host was not ready within %v", strings.Join(flags, " "), r.cfg.Within)
}

// call calls a tool with the criterion's bound. A host that ignores its
// context is reported as hung, not waited for.
func (r *hostRun) call(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	return callBounded(ctx, r.host, r.cfg.Within, name, args)
}

// errHostHung is the error of a call that did not return within its bound
// and a grace period after its context ended.
var errHostHung = errors.New("the host's CallTool did not return after its context ended: it ignores cancellation (hung, or still busy)")

func callBounded(ctx context.Context, h Host, within time.Duration, name string, args map[string]any) (json.RawMessage, error) {
	cctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	type out struct {
		res json.RawMessage
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := h.CallTool(cctx, name, args)
		done <- out{res, err}
	}()
	select {
	case o := <-done:
		return o.res, o.err
	case <-cctx.Done():
	}
	// A host may need a moment to notice its context: grant half the bound
	// again, at least 2s, before calling it unresponsive.
	grace := time.NewTimer(max(2*time.Second, within/2))
	defer grace.Stop()
	select {
	case o := <-done:
		if o.err == nil {
			return o.res, nil
		}
		return nil, fmt.Errorf("tools/call %s: no answer within %v: %w", name, within, o.err)
	case <-grace.C:
		return nil, fmt.Errorf("tools/call %s: %w", name, errHostHung)
	}
}

// fakeReport reads the fake's report file.
func (r *hostRun) fakeReport() (fakeserver.Report, error) {
	return fakeserver.ReadReportFile(r.report)
}

// close ends the host and makes sure the fake is gone.
func (r *hostRun) close() error {
	var err error
	if r.host != nil {
		done := make(chan error, 1)
		go func() { done <- r.host.Close() }()
		t := time.NewTimer(5 * time.Second)
		select {
		case err = <-done:
			t.Stop()
		case <-t.C:
			err = errors.New("the host's Close did not return within 5s")
		}
	}
	r.kill() // the host should have stopped the fake; make sure
	return err
}

type hostCriterion struct {
	name string
	run  func(ctx context.Context, r *hostRun) Result
}

var hostCriteria = []hostCriterion{
	{"under-limit", hostUnderLimit},
	{"over-limit", hostOverLimit},
	{"huge-field", hostHugeField},
	{"many-blocks", hostManyBlocks},
	{"invalid-json-response", hostInvalidJSON},
	{"stderr-noise", hostStderrNoise},
	{"junk-on-stdout", hostJunk},
	{"cancel-during-output", hostCancel},
	{"idle-notifications", hostIdleNotifications},
	{"era-legacy", hostEra(fakeserver.EraLegacy)},
	{"era-modern", hostEra(fakeserver.EraModern)},
}

// HostCriterionNames lists the criteria of HostCriteria in the order they run.
func HostCriterionNames() []string {
	var names []string
	for _, c := range hostCriteria {
		names = append(names, c.name)
	}
	return names
}

// CheckHost runs the host release criteria: for each, it starts a fresh fake
// server (package fakeserver, as a child process of this test binary) with
// the criterion's faults, starts a host against it with newHost, and judges
// what the host did, using the fake's report. The test binary's TestMain
// must call mcptest.Main (or mcptest.ServeHelper), so that the fake can run
// as a child.
func CheckHost(ctx context.Context, newHost HostFactory, cfg HostConfig) *Report {
	cfg = cfg.withDefaults()
	start := time.Now()
	rep := &Report{Subject: "host"}
	for _, c := range hostCriteria {
		if cfg.Run != nil && !cfg.Run.MatchString(c.name) {
			continue
		}
		rep.Results = append(rep.Results, runHostCriterion(ctx, newHost, cfg, c))
	}
	rep.Duration = time.Since(start)
	return rep
}

// HostCriteria runs the host release criteria as named subtests of t, each
// with a fresh fake and a fresh host.
func HostCriteria(t *testing.T, newHost HostFactory, cfg HostConfig) {
	t.Helper()
	cfg = cfg.withDefaults()
	for _, c := range hostCriteria {
		if cfg.Run != nil && !cfg.Run.MatchString(c.name) {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			reportResult(t, runHostCriterion(testContext(t), newHost, cfg, c))
		})
	}
}

func runHostCriterion(ctx context.Context, newHost HostFactory, cfg HostConfig, c hostCriterion) Result {
	start := time.Now()
	res := func() Result {
		dir, err := os.MkdirTemp("", "mcpstdio-host-")
		if err != nil {
			return failErr("temporary directory for the fake's report", err)
		}
		defer os.RemoveAll(dir)
		cctx, cancel := context.WithTimeout(ctx, 6*cfg.Within)
		defer cancel()
		r := &hostRun{kill: cancel, cfg: cfg, newHost: newHost, dir: dir, name: c.name}
		res := c.run(cctx, r)
		if err := r.close(); err != nil && res.Verdict != Fail {
			res.Details = strings.TrimSpace(res.Details + "\nclosing the host: " + err.Error())
		}
		return res
	}()
	res.Name = c.name
	res.Duration = time.Since(start)
	return res
}

func hostStartFailed(err error) Result { return failErr("the host did not start", err) }

// checkFollowUp is the "a further request succeeds" step of every criterion.
func (r *hostRun) checkFollowUp(ctx context.Context) error {
	res, err := r.call(ctx, "echo", map[string]any{"text": "still there?"})
	if err != nil {
		return fmt.Errorf("a further tools/call echo failed: %w", err)
	}
	if !strings.Contains(string(res), "still there?") {
		return fmt.Errorf("a further tools/call echo returned %.200s, want the echoed text", res)
	}
	return nil
}

// bigResult calls big and checks that the payload arrived whole: the
// result's text adds up to at least want bytes in at least blocks blocks.
func (r *hostRun) bigResult(ctx context.Context, args fakeserver.BigArgs, want, blocks int) (int, error) {
	res, err := r.call(ctx, "big", args.Map())
	if err != nil {
		return 0, err
	}
	var out struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return 0, fmt.Errorf("result is not a tools/call result: %v", err)
	}
	if out.IsError {
		return 0, fmt.Errorf("the tool reported an error: %.300s", res)
	}
	got := len(out.StructuredContent)
	for _, c := range out.Content {
		got += len(c.Text)
	}
	if got < want || len(out.Content) < blocks {
		return got, fmt.Errorf("result holds %d bytes of text in %d blocks, want at least %d bytes in %d blocks: the payload did not arrive intact", got, len(out.Content), want, blocks)
	}
	return got, nil
}

func hostUnderLimit(ctx context.Context, r *hostRun) Result {
	if r.cfg.MaxFrame <= 0 {
		return skip("HostConfig.MaxFrame not set")
	}
	if err := r.start(ctx); err != nil {
		return hostStartFailed(err)
	}
	// 1 KiB under: hosts differ in whether the newline and their
	// decoder's read-ahead count towards the limit.
	size := r.cfg.MaxFrame - 1024
	got, err := r.bigResult(ctx, fakeserver.BigArgs{FrameSize: size, Kind: fakeserver.PayloadMultibyte}, size-1024, 1)
	if err != nil {
		return failErr(fmt.Sprintf("a %d-byte response (limit %d)", size, r.cfg.MaxFrame), err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("after a response just under the limit", err)
	}
	return pass("a %d-byte response (multibyte UTF-8) arrived intact (%d bytes of text); a further call succeeded", size, got)
}

func hostOverLimit(ctx context.Context, r *hostRun) Result {
	if r.cfg.MaxFrame <= 0 {
		return skip("HostConfig.MaxFrame not set")
	}
	if err := r.start(ctx); err != nil {
		return hostStartFailed(err)
	}
	size := r.cfg.MaxFrame + 1024
	begin := time.Now()
	_, err := r.call(ctx, "big", fakeserver.BigArgs{FrameSize: size}.Map())
	took := time.Since(begin)
	switch {
	case err == nil:
		return Result{Verdict: Fail, Evidence: fmt.Sprintf("a %d-byte response over the host's %d-byte limit was accepted", size, r.cfg.MaxFrame),
			Rule: "transport limit: the host never parses a frame over its limit"}
	case errors.Is(err, errHostHung) || errors.Is(err, context.DeadlineExceeded):
		return failErr(fmt.Sprintf("a %d-byte response over the limit", size), err)
	}
	evidence := fmt.Sprintf("a %d-byte response over the limit gave a bounded error in %v (%s)", size, took.Round(time.Millisecond), firstLine(err.Error()))
	if ferr := r.checkFollowUp(ctx); ferr != nil {
		if errors.Is(ferr, errHostHung) || errors.Is(ferr, context.DeadlineExceeded) {
			return failErr(evidence+"; then", ferr)
		}
		return pass("%s; the host then reported the session ended (%s)", evidence, firstLine(ferr.Error()))
	}
	return pass("%s; a further call succeeded", evidence)
}

func hostHugeField(ctx context.Context, r *hostRun) Result {
	if err := r.start(ctx); err != nil {
		return hostStartFailed(err)
	}
	// Quotes and backslashes take twice their size on the wire.
	size := r.cfg.HugeField
	got, err := r.bigResult(ctx, fakeserver.BigArgs{FrameSize: size, Kind: fakeserver.PayloadQuotes}, (size-1024)/2, 1)
	if err != nil {
		return failErr(fmt.Sprintf("a %d-byte response that is one text field of quotes and backslashes", size), err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("after one huge field", err)
	}
	return pass("a %d-byte response holding one field of %d bytes of quotes and backslashes arrived intact; a further call succeeded", size, got)
}

func hostManyBlocks(ctx context.Context, r *hostRun) Result {
	if err := r.start(ctx); err != nil {
		return hostStartFailed(err)
	}
	// Each block carries about 40 bytes of envelope and 64 of text.
	size := r.cfg.Blocks * 64
	got, err := r.bigResult(ctx, fakeserver.BigArgs{Bytes: size, Layout: fakeserver.LayoutBlocks, Blocks: r.cfg.Blocks, Kind: fakeserver.PayloadNewlines}, size, r.cfg.Blocks)
	if err != nil {
		return failErr(fmt.Sprintf("%d content blocks", r.cfg.Blocks), err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("after many blocks", err)
	}
	return pass("%d content blocks (%d bytes of text with escaped newlines) arrived intact; a further call succeeded", r.cfg.Blocks, got)
}

// followUpAfter is the shape of the fault criteria: start the fake with
// flags, make calls, and see that they work.
func followUpAfter(what string, flags ...string) func(ctx context.Context, r *hostRun) Result {
	return func(ctx context.Context, r *hostRun) Result {
		if err := r.start(ctx, flags...); err != nil {
			return hostStartFailed(err)
		}
		for range 2 {
			if err := r.checkFollowUp(ctx); err != nil {
				return failErr("after "+what, err)
			}
		}
		return pass("after %s two calls succeeded", what)
	}
}

func hostInvalidJSON(ctx context.Context, r *hostRun) Result {
	return followUpAfter("an invalid JSON line on stdout", "-invalid-json-after", "1")(ctx, r)
}

func hostStderrNoise(ctx context.Context, r *hostRun) Result {
	return followUpAfter(fmt.Sprintf("%d bytes of stderr", r.cfg.StderrNoise), "-stderr-noise", fmt.Sprint(r.cfg.StderrNoise))(ctx, r)
}

func hostJunk(ctx context.Context, r *hostRun) Result {
	return followUpAfter("a banner and a log line on stdout", "-banner", "fake server ready", "-stdout-log-after", "2")(ctx, r)
}

func hostEra(era fakeserver.Era) func(ctx context.Context, r *hostRun) Result {
	return func(ctx context.Context, r *hostRun) Result {
		return followUpAfter("negotiating with a "+string(era)+"-only server", "-era", string(era))(ctx, r)
	}
}

func hostCancel(ctx context.Context, r *hostRun) Result {
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
		return failErr("waiting for the fake to run the slow call", err)
	}
	cancel()
	err := <-done
	if errors.Is(err, errHostHung) {
		return failErr("cancelling the call", err)
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
			Rule: "cancellation: a host that abandons a request MUST send notifications/cancelled so the work stops"}
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("after the cancel and the fake's late response", err)
	}
	return pass("the fake received notifications/cancelled (work %s, stopped after %v); its late response did not break the host; a further call succeeded",
		cancelled.State, cancelled.StoppedAfter.Round(time.Millisecond))
}

func hostIdleNotifications(ctx context.Context, r *hostRun) Result {
	if err := r.start(ctx, "-idle-notify-bytes", fmt.Sprint(r.cfg.IdleNotifications)); err != nil {
		return hostStartFailed(err)
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("first call", err)
	}
	// The fake now writes its notifications while the host is idle: it
	// must get them all out without blocking long.
	if err := r.waitReport(ctx, func(rep fakeserver.Report) bool { return rep.IdleNotifyDone }); err != nil {
		rep, _ := r.fakeReport()
		res := failErr(fmt.Sprintf("the fake got only %d of %d bytes of notifications out while the host was idle: the host does not read stdout between calls", rep.IdleNotifyBytes, r.cfg.IdleNotifications), err)
		res.Rule = "the host reads the server's stdout for the whole life of the server, whatever it is doing"
		return res
	}
	if err := r.checkFollowUp(ctx); err != nil {
		return failErr("after the notifications", err)
	}
	rep, _ := r.fakeReport()
	return pass("%d bytes of notifications written while the host was idle, longest stdout block %v; a further call succeeded", r.cfg.IdleNotifications, rep.StdoutLongestBlock.Round(time.Millisecond))
}

// waitReport polls the fake's report file until ok, bounded by ctx and the
// criterion's bound: the report is a file the fake rewrites as it changes,
// with no notification to wait on.
func (r *hostRun) waitReport(ctx context.Context, ok func(fakeserver.Report) bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Within)
	defer cancel()
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if rep, err := r.fakeReport(); err == nil && ok(rep) {
			return nil
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return fmt.Errorf("the fake's report did not show it within %v: %w", r.cfg.Within, ctx.Err())
		}
	}
}

// SessionHost is a HostFactory for this library's own host, mcptest.Session,
// started with opts: the reference a host under test can be compared with,
// and proof that the criteria can be met.
func SessionHost(opts ...mcptest.Option) HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (Host, error) {
		s, err := mcptest.Start(ctx, mcptest.Exec(cmd), opts...)
		if err != nil {
			return nil, err
		}
		return sessionHost{s}, nil
	}
}

type sessionHost struct{ s *mcptest.Session }

func (h sessionHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	p := h.s.Send(wire.MethodToolsCall, map[string]any{"name": name, "arguments": args})
	resp, err := p.Wait(ctx)
	if err != nil {
		if ctx.Err() != nil {
			// Abandoning a request means cancelling it.
			_ = p.Cancel(ctx.Err().Error())
		}
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

func (h sessionHost) Close() error { return h.s.Close() }
