package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
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
// part of what is tested) and be ready to call tools when it returns. Its
// result is used only if err is nil; a host it returns with an error is
// closed if it is not a nil pointer.
type HostFactory func(ctx context.Context, cmd *exec.Cmd) (Host, error)

// HostConfig configures HostCriteria and CheckHost.
type HostConfig struct {
	// MaxFrame is the host's transport limit: the most bytes of one
	// JSON-RPC message it accepts. Zero skips the two criteria about it.
	MaxFrame int
	// Within bounds each call the battery makes, and the host's Close. A
	// call still running at the bound is given half the bound again (at
	// least 2s) to notice its context before the host is called hung.
	// Default 10s.
	Within time.Duration
	// StartTimeout bounds the HostFactory starting the host against the
	// fake, never counted in Within. Default 30s.
	StartTimeout time.Duration
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
	// Cap bounds the wait for the host's own bounds (a call's, the
	// handshake's, its shutdown's) in the criteria that wait for them
	// (host-timeout, progress-forever, late-after-cancel, stdin-not-read,
	// shutdown-ladder, handshake-timeout): a host still waiting past it
	// fails. Default 2 min (DefaultHostCap).
	Cap time.Duration
	// ToolsListBytes is the size of large-tools-list's tools/list. Default
	// 300 KB.
	ToolsListBytes int
	// Run, if set, selects the criteria whose names it matches.
	Run *regexp.Regexp
	// Expect names the verdicts a host is known to get, as
	// ServerConfig.Expect does; keys are HostCriterionNames.
	Expect map[string]Verdict
}

// withDefaults fills the zero fields with the defaults the fields' docs
// name.
func (c HostConfig) withDefaults() HostConfig {
	if c.Within <= 0 {
		c.Within = 10 * time.Second
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 30 * time.Second
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
	if c.Cap <= 0 {
		c.Cap = DefaultHostCap
	}
	if c.ToolsListBytes <= 0 {
		c.ToolsListBytes = 300_000
	}
	if c.IdleNotifications <= 0 {
		c.IdleNotifications = 1 << 20
	}
	return c
}

// hostFixture is one host criterion's fake and host.
type hostFixture struct {
	kill    context.CancelFunc // kills the fake
	ctx     context.Context    // ends when the criterion ends
	cfg     HostConfig
	newHost HostFactory
	dir     string // the fake's reports: made for this fixture, removed by close
	dirErr  error  // why dir could not be made: the fixture starts nothing
	name    string
	host    Host
	cmd     *exec.Cmd
	report  string

	command *HostCommand // the host as a command (host_command.go), or nil
	run     *commandRun  // its run, once started
}

// start starts the fake with the given flags and a host against it.
func (r *hostFixture) start(ctx context.Context, flags ...string) error {
	if r.dirErr != nil {
		return r.dirErr
	}
	r.report = r.reportPattern()
	flags = append([]string{"-report", r.report}, flags...)
	if r.command != nil {
		return r.startCommand(flags)
	}
	// The fake is killed when the criterion ends, whatever the host does.
	cmd, err := fakeCommand(r.ctx, flags...)
	if err != nil {
		return fmt.Errorf("%w\n(the host criteria run the fake server as a child of the test binary: the package's TestMain must be `func TestMain(m *testing.M) { mcptest.Main(m) }`)", err)
	}
	r.cmd = cmd
	done := goAdapter("the HostFactory", func() (Host, error) { return r.newHost(ctx, r.cmd) })
	t := time.NewTimer(r.cfg.StartTimeout)
	defer t.Stop()
	select {
	case s := <-done:
		r.keep(s.v)
		if s.err != nil {
			return fmt.Errorf("starting the host against the fake (%s): %w", strings.Join(flags, " "), s.err)
		}
		if r.host == nil {
			return fmt.Errorf("starting the host against the fake (%s): the HostFactory returned a nil Host and no error", strings.Join(flags, " "))
		}
		return nil
	case <-t.C:
	}
	r.kill() // unblocks a host stuck reading the fake
	select {
	case s := <-done:
		r.keep(s.v)
	case <-time.After(5 * time.Second):
	}
	return fmt.Errorf("starting the host against the fake (%s): the host was not ready within %v (StartTimeout)", strings.Join(flags, " "), r.cfg.StartTimeout)
}

// reportPattern is the path of the fake's report, {pid} in it.
func (r *hostFixture) reportPattern() string {
	return filepath.Join(r.dir, r.name+"-"+fakeserver.ReportPID+".json")
}

// keep keeps h to be closed at the end, unless it is nil or a nil pointer
// (a factory that returns (*Client)(nil), err).
func (r *hostFixture) keep(h Host) {
	if h == nil {
		return
	}
	if v := reflect.ValueOf(h); (v.Kind() == reflect.Pointer || v.Kind() == reflect.Map || v.Kind() == reflect.Slice ||
		v.Kind() == reflect.Func || v.Kind() == reflect.Interface || v.Kind() == reflect.Chan) && v.IsNil() {
		return
	}
	r.host = h
}

// call calls a tool with the criterion's bound. A host that ignores its
// context is reported as hung, not waited for.
func (r *hostFixture) call(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	return callBounded(ctx, r.host, r.cfg.Within, name, args)
}

// errHostHung is the error of a call that did not return within its bound
// and a grace period after its context ended.
var errHostHung = errors.New("the host's CallTool did not return after its context ended: it ignores cancellation (hung, or still busy)")

func callBounded(ctx context.Context, h Host, within time.Duration, name string, args map[string]any) (json.RawMessage, error) {
	cctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	done := goAdapter("the host's CallTool", func() (json.RawMessage, error) { return h.CallTool(cctx, name, args) })
	select {
	case o := <-done:
		return o.v, o.err
	case <-cctx.Done():
	}
	// A host may need a moment to notice its context: grant half the bound
	// again, at least 2s, before calling it unresponsive.
	grace := time.NewTimer(max(2*time.Second, within/2))
	defer grace.Stop()
	select {
	case o := <-done:
		if o.err == nil {
			return o.v, nil
		}
		return nil, fmt.Errorf("tools/call %s: no answer within %v: %w", name, within, o.err)
	case <-grace.C:
		return nil, fmt.Errorf("tools/call %s: %w", name, errHostHung)
	}
}

// outcome is what a call into the host's adapter returned.
type outcome[T any] struct {
	v   T
	err error
}

// goAdapter calls f, the host adapter's code, in a goroutine of its own,
// whose end the caller waits for within its bound, and delivers what f
// returned, or a panic in it as an error saying that what panicked.
func goAdapter[T any](what string, f func() (T, error)) <-chan outcome[T] {
	done := make(chan outcome[T], 1)
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- outcome[T]{err: fmt.Errorf("%s panicked: %v\n%s", what, v, stack())}
			}
		}()
		v, err := f()
		done <- outcome[T]{v, err}
	}()
	return done
}

// fakeReport reads the report of the first fake the host started (a host
// that restarts the server starts more, see reportFiles).
// A fake that could not write its report makes the error a harnessError:
// what the report does not hold is the harness's loss, not the host's
// doing.
func (r *hostFixture) fakeReport() (fakeserver.Report, error) {
	files := r.reportFiles()
	if len(files) == 0 {
		// A fake that could not write its first report leaves only its
		// trace, whose name begins with the report's.
		traces, _ := filepath.Glob(filepath.Join(r.dir, r.name+"-*.json?*"))
		for _, t := range traces {
			path := t[:strings.LastIndex(t, ".json")+len(".json")]
			if _, err := fakeserver.ReadReportFile(path); errors.As(err, new(*fakeserver.ReportWriteError)) {
				return fakeserver.Report{}, &harnessError{fmt.Errorf("the harness could not record what the fake saw, so what the host did is not known: %w", err)}
			}
		}
		return fakeserver.Report{}, fmt.Errorf("no report in %s: the host did not start the fake", r.dir)
	}
	var first fakeserver.Report
	var firstErr error
	for i, f := range files {
		rep, err := fakeserver.ReadReportFile(f)
		if we := (*fakeserver.ReportWriteError)(nil); errors.As(err, &we) {
			return rep, &harnessError{fmt.Errorf("the harness could not record what the fake saw, so what the host did is not known: %w", err)}
		}
		if i == 0 || (err == nil && len(rep.Requests) > 0 && (len(first.Requests) == 0 || rep.Requests[0].Arrived.Before(first.Requests[0].Arrived))) {
			first, firstErr = rep, err
		}
	}
	return first, firstErr
}

func (r *hostFixture) diagnose() string {
	rep, err := r.fakeReport()
	if err != nil {
		return "the fake's report: " + err.Error()
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	return "the fake's report:\n" + string(b)
}

func (r *hostFixture) abort() {
	r.kill()
	if r.run != nil {
		killProcessGroup(r.run.cmd)
	}
}

// close ends the host, within the criterion's bound, and makes sure the
// fake is gone. It removes the fixture's directory, which it made (never
// another: with no directory of its own the fixture started nothing).
//
// A fake that could not write its report makes the error a harnessError
// (see fakeReport): the criterion's verdict rests on that report, and is
// not the host's.
func (r *hostFixture) close() (string, error) {
	if r.dirErr == nil {
		defer os.RemoveAll(r.dir)
	}
	var err error
	if r.command != nil {
		err = r.endCommand()
	}
	if rep, rerr := r.fakeReport(); r.command == nil && rerr == nil && !rep.StdinStopped.IsZero() && rep.Exit == "" {
		// The fake stopped reading stdin (stdin-not-read): the host's
		// close of its stdin cannot reach it, and the host would wait out
		// its grace before a signal. The criterion is over: end the fake
		// first.
		r.kill()
	}
	if r.host != nil {
		done := goAdapter("the host's Close", func() (struct{}, error) { return struct{}{}, r.host.Close() })
		t := time.NewTimer(r.cfg.Within)
		select {
		case o := <-done:
			err = o.err
			t.Stop()
		case <-t.C:
			err = fmt.Errorf("the host's Close did not return within %v", r.cfg.Within)
		}
	}
	r.kill() // the host should have stopped the fake; make sure
	if rerr := r.recordErr(); rerr != nil {
		err = rerr
	}
	return "", err
}

var hostCriteria = []criterion[*hostFixture]{
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
	{"host-timeout", hostTimeout},
	{"progress-forever", hostProgressForever},
	{"late-after-cancel", hostLateAfterCancel},
	{"crash-mid-call", hostCrashMidCall},
	{"stdin-not-read", hostStdinNotRead},
	{"close-bounded", hostCloseBounded},
	{"large-tools-list", hostLargeToolsList},
	{"shutdown-ladder", hostShutdownLadder},
	{"handshake-timeout", hostHandshakeTimeout},
}

// HostCriterionNames lists the host criteria in the order they run.
func HostCriterionNames() []string { return (&battery[*hostFixture]{criteria: hostCriteria}).names() }

func hostBattery(ctx context.Context, newHost HostFactory, command *HostCommand, cfg HostConfig) *battery[*hostFixture] {
	cfg = cfg.withDefaults()
	criteria, first := hostCriteria, &firstRun{}
	if command != nil {
		criteria = first.needCall(hostCriteria)
	}
	return &battery[*hostFixture]{
		subject:  "host",
		criteria: criteria,
		fixture: func(name string) *hostFixture {
			fctx, kill := context.WithCancel(ctx)
			dir, err := reportDir()
			return &hostFixture{ctx: fctx, kill: kill, cfg: cfg, newHost: newHost, command: command, dir: dir, dirErr: err, name: name}
		},
		start: func(ctx context.Context) Result {
			fctx, kill := context.WithCancel(ctx)
			dir, err := reportDir()
			f := &hostFixture{ctx: fctx, kill: kill, cfg: cfg, newHost: newHost, command: command, dir: dir, dirErr: err, name: "start"}
			if err != nil {
				kill()
				return failErr(ruleHarness, "not checked", err)
			}
			begin := time.Now()
			err = f.startCheck(ctx, first)
			took := time.Since(begin)
			_, cerr := f.close()
			if errors.As(cerr, new(*harnessError)) {
				return failErr(ruleRecord, "not checked", cerr)
			}
			if errors.As(err, new(*harnessError)) {
				return failErr(ruleRecord, "not checked", err)
			}
			if err != nil {
				res := failErr(startRule(command), "the host did not start against the fake", err)
				return res
			}
			res := pass("the host started against the fake in %v", took.Round(time.Millisecond))
			if left := (leftBehind("")); errors.As(cerr, &left) {
				res.Evidence += "; " + string(left)
			}
			return res
		},
		budget: func(name string) time.Duration { return cfg.StartTimeout + hostBudget(name, cfg) },
		run:    cfg.Run,
		expect: cfg.Expect,
		rules:  hostRules,
	}
}

// CheckHost runs the host release criteria: for each, it starts a fresh fake
// server (package fakeserver, as a child process of this test binary) with
// the criterion's faults, starts a host against it with newHost, and judges
// what the host did, using the fake's report and the call's outcome. The
// test binary's TestMain must call mcptest.Main, so that the fake can run
// as a child. A host that does not start fails "start" once, the report's
// only result (see HostConfig.StartTimeout). A factory or a host that
// panics, returns a nil host, or does not return within its bound is a
// failed criterion with what it did; the other criteria run. ctx bounds
// the whole run.
func CheckHost(ctx context.Context, newHost HostFactory, cfg HostConfig) *Report {
	return hostBattery(ctx, newHost, nil, cfg).all(ctx, nil)
}

// HostCriteria runs the host release criteria as named subtests of t, each
// with a fresh fake and a fresh host (see CheckHost).
func HostCriteria(t *testing.T, newHost HostFactory, cfg HostConfig) {
	t.Helper()
	hostBattery(t.Context(), newHost, nil, cfg).tests(t)
}

// reportDir makes the directory of a fixture's fake reports, in the
// temporary directory. Its error is the harness's, and says so: the
// criterion is not checked, and nothing is removed.
func reportDir() (string, error) {
	dir, err := os.MkdirTemp("", "mcpstdio-host-")
	if err != nil {
		return "", &harnessError{fmt.Errorf("the harness could not make a directory for the fake's reports in the temporary directory %s ($TMPDIR): %w", os.TempDir(), err)}
	}
	return dir, nil
}

// ruleHarness is the rule of a criterion the harness could not run.
const ruleHarness = "the harness runs each criterion in a directory of its own; when it cannot make one, nothing is checked and nothing removed"

// ruleRecord is the rule of a criterion whose fake could not write its
// report, the harness's record of what the host did.
const ruleRecord = "the harness judges a host by the fake's report; when the fake cannot write it, nothing is checked"

// harnessError is an error of the harness, not of the host under test.
type harnessError struct{ err error }

func (e *harnessError) Error() string { return e.err.Error() }
func (e *harnessError) Unwrap() error { return e.err }

// hostStartFailed is the verdict of a criterion whose host did not start:
// the criterion's own rule (the battery fills it in), and why.
func hostStartFailed(err error) Result {
	if he := (*harnessError)(nil); errors.As(err, &he) {
		return failErr(ruleHarness, "not checked", err)
	}
	return failErr("", "the host did not start, so this was not checked", err)
}

// hostRules are the host criteria's rules, for a verdict that names none.
var hostRules = map[string]string{
	"under-limit": ruleHostIntact, "over-limit": ruleHostLimit, "huge-field": ruleHostIntact, "many-blocks": ruleHostIntact,
	"invalid-json-response": ruleHostGoesOn, "stderr-noise": ruleHostReads, "junk-on-stdout": ruleHostGoesOn,
	"cancel-during-output": ruleHostCancel, "idle-notifications": ruleHostReads, "era-legacy": ruleHostEra, "era-modern": ruleHostEra,
	"host-timeout": ruleHostTimeout, "progress-forever": ruleHostProgress, "late-after-cancel": ruleHostLate,
	"crash-mid-call": ruleHostCrash, "stdin-not-read": ruleHostStdin, "close-bounded": ruleHostCloseBounded, "large-tools-list": ruleHostToolList,
	"shutdown-ladder": ruleHostShutdown, "handshake-timeout": ruleHostHandshake,
}

// checkFollowUp is the "a further request succeeds" step of every criterion.
func (r *hostFixture) checkFollowUp(ctx context.Context) error {
	res, err := r.call(ctx, "echo", map[string]any{"text": "still there?"})
	if err != nil {
		return fmt.Errorf("a further tools/call echo failed: %w", err)
	}
	if !strings.Contains(string(res), "still there?") {
		return fmt.Errorf("a further tools/call echo returned %.200s, want the echoed text", res)
	}
	return nil
}

// bigIntact checks that a big result arrived whole: its text adds up to at
// least want bytes in at least blocks blocks.
func bigIntact(res json.RawMessage, want, blocks int) (int, error) {
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
