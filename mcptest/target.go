package mcptest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Targets. Command and Exec run a child process; GoBuild builds a main
// package once per test binary and runs it; InProcess runs a ServeFunc in
// a goroutine, on the same kind of pipes; Helper re-executes the test
// binary as a child serving a ServeFunc registered with RegisterHelper,
// for which the package's TestMain calls Main:
//
//	func init() { mcptest.RegisterHelper("naive", naiveServer) }
//	func TestMain(m *testing.M) { mcptest.Main(m) } // helpers + goleak
//
// Children run in their own process group (Unix), so that signals from
// Close also reach what they start.

// ServeFunc serves MCP on the streams (real kernel pipes) until they end or
// ctx is done: the shape of the Go SDK's mcp.IOTransport and mcp-go's Listen.
type ServeFunc func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error

// Target is a server to start: a child (Command, Exec, Helper) or InProcess.
type Target interface {
	// String describes the target in diagnoses.
	String() string
	start(s *Session) (process, error)
}

// Command returns a Target that runs the named program with args as a child
// process, like exec.Command.
func Command(name string, args ...string) Target {
	return &cmdTarget{build: func() *exec.Cmd { return exec.Command(name, args...) }, desc: fmt.Sprint(append([]string{name}, args...))}
}

// Exec returns a Target that runs cmd, once; its standard streams must be nil.
// Start sets a zero WaitDelay and, on Unix, a process group.
func Exec(cmd *exec.Cmd) Target {
	// The process group is set only if SysProcAttr is nil.
	return &cmdTarget{build: func() *exec.Cmd { return cmd }, desc: cmd.String()}
}

type cmdTarget struct {
	build func() *exec.Cmd
	desc  string
}

func (t *cmdTarget) String() string { return "command " + t.desc }

func (t *cmdTarget) start(s *Session) (process, error) {
	cmd := t.build()
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, fmt.Errorf("mcptest: Exec: cmd.Stdin, Stdout and Stderr must be nil; the session connects them")
	}
	return startChild(s, cmd)
}

// InProcess returns a Target that runs serve in a goroutine of this process,
// on real kernel pipes. A serve that ignores Close is reported stuck and left
// running; servers with global state (mcp-go) need Helper.
func InProcess(serve ServeFunc) Target { return &inProcessTarget{serve: serve} }

// inProcessTarget is InProcess: its stacks appear in Diagnose. Servers with
// global state cannot run twice at once in one process.
type inProcessTarget struct{ serve ServeFunc }

func (t *inProcessTarget) String() string { return "in-process server " + funcName(t.serve) }

func (t *inProcessTarget) start(s *Session) (process, error) { return startInProcess(s, t.serve), nil }

// Environment variables that make the test binary a helper child.
const (
	helperEnv     = "MCPTEST_HELPER"
	helperArgsEnv = "MCPTEST_HELPER_ARGS"
	helperDLEnv   = "MCPTEST_HELPER_DEADLINE"
)

var (
	helpersMu   sync.Mutex
	helpers     = map[string]ServeFunc{}
	helpersUsed = map[string]bool{} // started by Helper or HelperCommand
)

// RegisterHelper registers serve under name for Helper(name), before TestMain
// calls Main (from init). A duplicate or empty name panics.
func RegisterHelper(name string, serve ServeFunc) {
	// From init or a package-level initializer: the child must have it before
	// TestMain calls Main.
	helpersMu.Lock()
	defer helpersMu.Unlock()
	if name == "" {
		panic("mcptest: RegisterHelper with an empty name")
	}
	if _, dup := helpers[name]; dup {
		panic("mcptest: RegisterHelper called twice for " + name)
	}
	helpers[name] = serve
	// A library's registration (assertions registers the fake for the host
	// criteria) is not the test's dead code: only helpers registered from
	// _test.go files must be started.
	if _, file, _, ok := runtime.Caller(1); ok && !strings.HasSuffix(file, "_test.go") {
		helpersUsed[name] = true
	}
}

// Helper returns a Target that re-executes the test binary serving the helper
// registered as name (TestMain must call Main); an unknown name panics.
func Helper(name string, args ...string) Target {
	// args reach it through HelperArgs; ServeHelper in TestMain does as Main.
	useHelper("Helper", name)
	return &helperTarget{name: name, args: args}
}

// useHelper panics if name is not registered, and marks it used.
func useHelper(caller, name string) {
	helpersMu.Lock()
	defer helpersMu.Unlock()
	if _, ok := helpers[name]; !ok {
		panic("mcptest: " + caller + "(" + name + "): no such helper; register it with RegisterHelper in init")
	}
	helpersUsed[name] = true
}

// errNoMain explains a helper that cannot start: the child would run the
// tests instead of serving.
func errNoMain(name string) error {
	return fmt.Errorf("mcptest: Helper(%s): this test binary's TestMain does not call mcptest.Main (or ServeHelper), so the re-executed binary would run the tests instead of serving the helper; add\n\tfunc TestMain(m *testing.M) { mcptest.Main(m) }", name)
}

type helperTarget struct {
	name string
	args []string
}

func (t *helperTarget) String() string { return fmt.Sprintf("helper %s%q", t.name, t.args) }

func (t *helperTarget) start(s *Session) (process, error) {
	if !helpersEnabled.Load() {
		return nil, errNoMain(t.name)
	}
	cmd, err := helperCommand(t.name, s.deadline, t.args)
	if err != nil {
		return nil, err
	}
	return startChild(s, cmd)
}

// HelperCommand returns the command Helper(name, args...) runs, killed when
// ctx ends; it fails for an unknown name or a TestMain without Main.
func HelperCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	// For code that starts the server itself (a host under test); killed as
	// exec.CommandContext kills. ServeHelper in TestMain does as Main does.
	helpersMu.Lock()
	_, ok := helpers[name]
	if ok {
		helpersUsed[name] = true
	}
	helpersMu.Unlock()
	if !ok {
		return nil, fmt.Errorf("mcptest: HelperCommand(%s): no such helper; register it with RegisterHelper in init", name)
	}
	if !helpersEnabled.Load() {
		return nil, errNoMain(name)
	}
	deadline, _ := ctx.Deadline()
	cmd, err := helperCommand(name, deadline, args)
	if err != nil {
		return nil, err
	}
	// Rebuild it bound to ctx; exec has no other way to attach one.
	bound := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	bound.Env = cmd.Env
	return bound, nil
}

func helperCommand(name string, deadline time.Time, args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("mcptest: Helper(%s): %w", name, err)
	}
	enc, _ := json.Marshal(args)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name, helperArgsEnv+"="+string(enc))
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		// A race-enabled child otherwise sleeps 1s before exiting.
		cmd.Env = append(cmd.Env, strings.TrimSpace("GORACE="+g+" atexit_sleep_ms=0"))
	}
	if !deadline.IsZero() {
		cmd.Env = append(cmd.Env, helperDLEnv+"="+deadline.Format(time.RFC3339Nano))
	}
	return cmd, nil
}

var helperArgs []string

// helpersEnabled records that this binary's TestMain serves helpers.
var helpersEnabled atomic.Bool

// HelperArgs returns, in a helper child, the args given to Helper; in any
// other process, nil.
func HelperArgs() []string { return append([]string(nil), helperArgs...) }

// A helper's context ends at the parent test's deadline; the child does not
// catch signals, so SIGTERM ends it as it would any Go program.

// ServeHelper, in a helper child, runs the registered helper on the standard
// streams and exits; elsewhere it returns at once. It is Main without goleak.
func ServeHelper() {
	helpersEnabled.Store(true)
	name := os.Getenv(helperEnv)
	if name == "" {
		return
	}
	helpersMu.Lock()
	serve, ok := helpers[name]
	names := make([]string, 0, len(helpers))
	for n := range helpers {
		names = append(names, n)
	}
	helpersMu.Unlock()
	if !ok {
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "mcptest: helper %q is not registered (registered: %q)\n", name, names)
		os.Exit(2)
	}
	if a := os.Getenv(helperArgsEnv); a != "" {
		if err := json.Unmarshal([]byte(a), &helperArgs); err != nil {
			fmt.Fprintf(os.Stderr, "mcptest: helper %q: bad %s: %v\n", name, helperArgsEnv, err)
			os.Exit(2)
		}
	}
	ctx := context.Background()
	if d, err := time.Parse(time.RFC3339Nano, os.Getenv(helperDLEnv)); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d)
		defer cancel()
	}
	if err := serve(ctx, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "mcptest: helper %q: %v\n", name, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// A helper nothing uses is dead code that looks tested, so Main fails the
// run for one when every test ran (no -run, -skip or -short), as os/exec's
// own helper tests do. A package that needs more in its TestMain calls
// ServeHelper first and then goleak.VerifyTestMain itself.

// Main is the TestMain of a package with helpers: a helper child serves
// (ServeHelper), else the tests run under goleak.VerifyTestMain with opts.
// Before goleak looks, Main waits for the in-process servers whose Close
// gave up (still working on something, such as a large request under the
// race detector) to return, up to 30 s before the test binary's timeout;
// those that do not are named, and goleak reports their goroutines.
//
//	func TestMain(m *testing.M) { mcptest.Main(m) }
func Main(m *testing.M, opts ...goleak.Option) {
	ServeHelper()
	goleak.VerifyTestMain(runner{m}, opts...)
}

type runner struct{ m *testing.M }

// lingerBound is how long Main waits for in-process servers still running
// after the tests: until 30 s before the test binary's -test.timeout (go
// test's default 10m), counted from the package's start.
func lingerBound() time.Duration {
	timeout := 10 * time.Minute
	if f := flag.Lookup("test.timeout"); f != nil {
		if d, err := time.ParseDuration(f.Value.String()); err == nil && d > 0 {
			timeout = d
		}
	}
	return max(time.Until(packageStart.Add(timeout))-30*time.Second, 0)
}

// packageStart is when the test binary started, near enough.
var packageStart = time.Now()

func (r runner) Run() int {
	code := r.m.Run()
	defer removeBuilt()
	if d := lingerBound(); lingering.waiting() {
		fmt.Printf("mcptest: waiting up to %v for in-process servers Close gave up on (still working) to return before looking for leaks\n", d.Round(time.Second))
		if left := lingering.wait(d); len(left) > 0 {
			fmt.Printf("mcptest: still running %v after the tests ended: %s\n", d.Round(time.Second), strings.Join(left, ", "))
		}
	}
	if code != 0 || testing.Short() || flagSet("test.run") || flagSet("test.skip") || flagSet("test.list") {
		return code
	}
	for _, name := range unusedHelpers() {
		fmt.Printf("mcptest: helper %q registered but never started by a test (RegisterHelper with no Helper or HelperCommand)\n", name)
		code = 1
	}
	return code
}

// unusedHelpers lists the registered helpers no Helper or HelperCommand
// has asked for, sorted.
func unusedHelpers() []string {
	helpersMu.Lock()
	defer helpersMu.Unlock()
	var unused []string
	for name := range helpers {
		if !helpersUsed[name] {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	return unused
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != ""
}
