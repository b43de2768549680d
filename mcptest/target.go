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
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// ServeFunc serves MCP on the given streams until they end or ctx is done.
// For an in-process target (InProcess) the streams are the *os.File ends of
// real kernel pipes, so its writes block when the host stops reading; for a
// helper (Helper) they are the child's os.Stdin, os.Stdout and os.Stderr.
// Its shape matches the official Go SDK (mcp.IOTransport{Reader: stdin,
// Writer: stdout}) and mcp-go (server.NewStdioServer(s).Listen(ctx, stdin,
// stdout)).
type ServeFunc func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error

// Target is a server to start: a child process (Command, CommandFunc,
// Exec, GoBuild, Helper) or a goroutine of this process (InProcess). A
// child runs in a process group of its own (Unix), so that the signals
// Close sends also reach what it starts.
type Target interface {
	// String describes the target in diagnoses.
	String() string
	start(s *Session) (process, error)
}

// Command returns a Target that runs the named program with args as a child
// process, like exec.Command: on Unix in a process group of its own, and on
// Linux with a parent-death signal, so that it is killed (SIGKILL) if this
// process dies.
func Command(name string, args ...string) Target {
	return &cmdTarget{build: func() *exec.Cmd { return exec.Command(name, args...) }, desc: fmt.Sprint(append([]string{name}, args...))}
}

// Exec returns a Target that runs cmd. Start connects cmd's Stdin, Stdout
// and Stderr to its pipes (they must be nil, or Start fails), sets
// WaitDelay if it is zero and, if SysProcAttr is nil, what Command sets: a
// process group of its own (Unix) and a parent-death signal (Linux). A
// caller that sets SysProcAttr keeps it as it is, and Close's signals then
// reach the child alone. A Cmd can be started once only, so the Target can
// be too.
func Exec(cmd *exec.Cmd) Target {
	return &cmdTarget{build: func() *exec.Cmd { return cmd }, desc: cmd.String()}
}

// CommandFunc returns a Target that runs the command build returns, calling
// build for each server it starts (a battery starts one per criterion), so
// that a command with an environment or a working directory of its own can
// start any number of times, as Exec's cannot. Each command is started as
// Exec starts its cmd (its streams must be nil; WaitDelay, process group).
// CommandFunc also calls build once itself, to describe the target.
func CommandFunc(build func() *exec.Cmd) Target {
	return &cmdTarget{build: build, desc: build().String()}
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

// InProcess returns a Target that runs serve in a goroutine of this
// process, on real kernel pipes; its goroutine stacks appear in Diagnose. A
// panic in serve is recovered and reported (ExitPanicked).
//
// A goroutine cannot be killed: if serve has not returned within the grace
// period (WithGrace) after Close cancelled its context and closed its
// stdin, Close closes its pipes; if it still does not return, Close reports
// it as stuck and leaves it running, and a goleak check at the end of the
// tests names it. Servers that keep global state (mcp-go's stdio server
// does) cannot run twice at once in one process: use Helper for those.
func InProcess(serve ServeFunc) Target { return &inProcessTarget{serve: serve} }

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

// RegisterHelper registers serve under name, to be run in a child process
// started with Helper(name) or HelperCommand. Call it from init or a
// package-level variable initializer, so that the child, which runs the same
// binary, has registered it before TestMain calls Main:
//
//	func init() { mcptest.RegisterHelper("naive", naiveServer) }
//	func TestMain(m *testing.M) { mcptest.Main(m) } // helpers + goleak
//
// A duplicate or empty name panics. A helper registered from a package's
// test files that no test starts fails the run (see Main).
func RegisterHelper(name string, serve ServeFunc) {
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

// Helper returns a Target that re-executes the running test binary as a
// child process serving the helper registered under name on its own stdin,
// stdout and stderr; args reach it through HelperArgs. The package's
// TestMain must call Main (or ServeHelper), or Start fails saying so: the
// child would run the tests instead of serving. Helper panics if name is
// not registered in this process.
func Helper(name string, args ...string) Target {
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

// HelperCommand returns the command that Helper(name, args...) runs: the
// running test binary, re-executed to serve the registered helper. It is
// for code that starts the server itself, such as a host under test (see
// assertions.HostCriteria). Like exec.CommandContext, the process is killed
// when ctx ends; the helper's own context ends at ctx's deadline.
// HelperCommand fails if name is not registered, or if the package's
// TestMain does not call Main (or ServeHelper): the child would then run
// the tests instead of serving.
func HelperCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
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

// ServeHelper, in a helper child, runs the registered helper on os.Stdin,
// os.Stdout and os.Stderr and exits: 0 when it returns nil, 1 when it
// returns an error (printed to stderr), 2 when the name is not registered.
// In any other process it returns at once. Call it first in a TestMain that
// cannot use Main; it is Main without goleak.
//
// The helper's context ends at the parent test's deadline (for
// HelperCommand, at its ctx's deadline); the child does not catch signals,
// so SIGTERM ends it as it would any Go program.
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

// Main is a TestMain for packages that use Helper: in a helper child it
// serves and exits (ServeHelper); otherwise it runs the tests under
// goleak.VerifyTestMain with opts, so the package both has helpers and
// checks for leaked goroutines, and removes the binaries GoBuild built.
// Before goleak looks, Main waits for the in-process servers whose Close
// gave up (still working on something, such as a large request under the
// race detector) to return, up to 30 s before the test binary's timeout;
// those that do not are named, and goleak reports their goroutines:
//
//	func TestMain(m *testing.M) { mcptest.Main(m) }
//
// When every test ran (no -run, -skip, -list or -short), a helper registered
// from a package's test files that no test started fails the run, as os/exec's own
// helper tests do: a helper nothing uses is dead code that looks tested. A
// package that needs more in its TestMain calls ServeHelper first and then
// goleak.VerifyTestMain itself.
//
// A passing run built with the race detector (and without coverage, which
// os.Exit's hooks write) exits without the detector's sleep at exit (GORACE
// atexit_sleep_ms, default 1 s, "to let other threads report races"):
// m.Run has failed the run for any race it saw, and goleak has just found no
// goroutine left to race, so the sleep is a second of nothing per package.
// A goleak.Cleanup in opts replaces this exit.
func Main(m *testing.M, opts ...goleak.Option) {
	ServeHelper()
	goleak.VerifyTestMain(runner{m}, append([]goleak.Option{goleak.Cleanup(exit)}, opts...)...)
}

// exit ends the test binary with code, as os.Exit does, but a passing run
// under the race detector without its sleep at exit (see Main).
func exit(code int) {
	if code == 0 && raceDetector && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
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
