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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/child"
	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// HostCommand is a host under test given as a command, in any language: it
// is run once per criterion against a fresh fake server, makes its own
// calls (the fake answers whatever tool it calls as the criterion needs),
// and is judged by what the fake saw and by how it ended. It runs in a
// process group of its own (Unix) and, on Linux, with a parent-death
// signal: it is killed (SIGKILL) if the process running the criteria dies.
// What it leaves running is ended and named in the criterion's evidence:
// what holds its output, what carries the run's mark in its environment
// and, on Linux when the process running the criteria is a child subreaper
// (prctl PR_SET_CHILD_SUBREAPER, as mcpstdio hostprobe is), every child of
// that process that appeared during the run, which is where an orphan or a
// detached daemon of the host ends up. Make a test binary a subreaper only
// if nothing else in it starts processes while the criteria run: those
// would be taken for the host's.
type HostCommand struct {
	// Argv is the host's command. A word {server} becomes the fake's
	// command line; in any word, {server_json}, {server_command_json} and
	// {server_args_json} become it, its first word and the rest as JSON.
	Argv []string
	// Configs are files written from templates, with the same
	// substitutions, before each run (their directories too).
	Configs []ConfigFile
	// Fake is the fake server's command, to which each criterion appends
	// its flags. Empty: this test binary (its TestMain is mcptest.Main).
	Fake []string
	// ExpectOutput, if set, must match the host's stdout and stderr for a
	// run to count as having worked: a host that exits 0 without it has
	// failed, with the failure only in its output (agent CLIs whose "mcp
	// list" exits 0 either way). large-tools-list passes on it, so give a
	// pattern that names the last of the fake's tools there, unless the
	// host calls a filler tool.
	ExpectOutput *regexp.Regexp
}

// ConfigFile is a file a HostCommand's host reads: Path is written from
// the template file Template before each run.
type ConfigFile struct{ Template, Path string }

// exitZero is hostOutcome.exit for a command that exited 0.
const exitZero = "exit status 0"

// hostOutputLimit bounds the head and the tail of a host's output kept.
const hostOutputLimit = 8 << 10

// CheckHostCommand runs the host criteria against a host command (see
// HostCommand and CheckHost); progress, if set, gets each result as soon
// as it is known. The criteria run as they do against a Go Host: the fake
// gets the criterion's faults, the host makes its call (a command calls
// whatever tool it calls, and the fake makes its first call behave as the
// criterion needs), and the verdict comes from the fake's report and how
// the command ended. What only one kind of host can show is a skip on the
// other, with the reason; a criterion about a call is a skip, naming what
// the command's first run sent, when that run made no tools/call.
func CheckHostCommand(ctx context.Context, h HostCommand, cfg HostConfig, progress func(Result)) *Report {
	return hostBattery(ctx, nil, &h, cfg).all(ctx, progress)
}

// HostCommandCriteria runs the host criteria against a host command as
// named subtests of t (see CheckHostCommand).
func HostCommandCriteria(t *testing.T, h HostCommand, cfg HostConfig) {
	t.Helper()
	hostBattery(t.Context(), nil, &h, cfg).tests(t)
}

// commandRun is one run of a host command.
type commandRun struct {
	cmd    *exec.Cmd
	out    *pipes.Capture
	begin  time.Time
	done   chan struct{} // closed once the host has exited and its output is in
	err    error         // Wait's error, once done
	ended  time.Time     // when the host exited
	killed bool          // the criterion killed it
	marker string        // KEY=value in the host's environment, and its servers'
	left   []leftProc    // processes of the run still running when the host exited
	held   []leftProc    // processes that held the host's output after it exited: ended
	before []proc.ID     // this process's children before the run (see adopted)
}

// fakeWords is the fake's command line with flags appended.
func (r *hostFixture) fakeWords(flags []string) ([]string, error) {
	if len(r.command.Fake) > 0 {
		return append(append([]string(nil), r.command.Fake...), flags...), nil
	}
	cmd, err := fakeCommand(r.ctx, flags...)
	if err != nil {
		return nil, err
	}
	// The helper is chosen by environment variables: env sets them, so the
	// command line alone starts it, whatever environment the host passes.
	words := []string{"env"}
	inherited := map[string]bool{}
	for _, e := range os.Environ() {
		inherited[e] = true
	}
	for _, e := range cmd.Env {
		if !inherited[e] {
			words = append(words, e)
		}
	}
	return append(append(words, cmd.Path), cmd.Args[1:]...), nil
}

// substitute replaces the server placeholders in s, in Argv's words and in
// the config files (for hosts that read their servers from a config file).
func substitute(s string, server []string) string {
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	return strings.NewReplacer("{server_json}", js(server), "{server_command_json}", js(server[0]),
		"{server_args_json}", js(append([]string{}, server[1:]...))).Replace(s)
}

// startCommand writes the config files and starts the host command
// against the fake started with flags.
func (r *hostFixture) startCommand(flags []string) error {
	server, err := r.fakeWords(flags)
	if err != nil {
		return fmt.Errorf("%w\n(the fake runs as a child of the test binary: the package's TestMain must be `func TestMain(m *testing.M) { mcptest.Main(m) }`, or HostCommand.Fake must be set)", err)
	}
	for _, c := range r.command.Configs {
		b, err := os.ReadFile(c.Template)
		if err != nil {
			return fmt.Errorf("config template: %w", err)
		}
		if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		if err := os.WriteFile(c.Path, []byte(substitute(string(b), server)), 0o600); err != nil {
			return fmt.Errorf("config file: %w", err)
		}
	}
	var argv []string
	for _, a := range r.command.Argv {
		if a == "{server}" { // the fake's command line, as separate words
			argv = append(argv, server...)
			continue
		}
		argv = append(argv, substitute(a, server))
	}
	if len(argv) == 0 {
		return errors.New("HostCommand.Argv is empty")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	run := &commandRun{cmd: cmd, out: pipes.NewCapture(hostOutputLimit), done: make(chan struct{}),
		marker: runMarker + "=" + filepath.Base(r.dir)}
	cmd.Env = append(os.Environ(), run.marker)
	// The output is a pipe of our own, so that the host's exit is known
	// when it happens and a process that keeps the pipe open after it (a
	// daemon it started) can be found by it.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("the host command's output pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	setProcessGroup(cmd)
	run.before = ownChildren()
	run.begin = time.Now()
	copied := make(chan struct{})
	// Started and waited for on a thread kept for the host's life, which
	// its parent-death signal needs (see child.Start).
	err = child.Start(cmd, func() {
		err := cmd.Wait()
		run.ended = time.Now()
		run.left = r.leftRunning(run)
		run.held = endHolders(pr, copied)
		pr.Close()
		<-copied
		run.err = err
		close(run.done)
	})
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("starting the host command: %w", err)
	}
	r.run = run
	go func() {
		defer close(copied)
		_, _ = io.Copy(run.out, pr)
	}()
	return nil
}

// waitCommand waits for the host command to end by itself, at most limit;
// past it the host is killed (with its process group: the fake with it).
func (r *hostFixture) waitCommand(ctx context.Context, limit time.Duration) hostOutcome {
	run := r.run
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-run.done:
	case <-t.C:
		run.killed = true
	case <-ctx.Done():
		run.killed = true
	}
	return r.commandOutcome()
}

// commandOutcome says how the host command ended, once it has, or, if the
// criterion gave up on it (run.killed), kills it with its process group
// first.
func (r *hostFixture) commandOutcome() hostOutcome {
	run := r.run
	if run.killed {
		killProcessGroup(run.cmd)
		<-run.done // endHolders bounds it
	}
	o := hostOutcome{took: run.ended.Sub(run.begin), ended: run.ended, atLimit: run.killed, output: run.out.String()}
	o.exit = exitZero
	switch re := r.command.ExpectOutput; {
	case run.err != nil:
		o.exit = run.err.Error()
		o.err = fmt.Errorf("the host command ended with %s: %s", o.exit, lastLine(o.output))
	case re != nil && !re.MatchString(o.output):
		o.err = fmt.Errorf("the host command exited 0, but its output does not match %q (HostCommand.ExpectOutput, -expect-output): %s", re, lastLine(o.output))
	}
	return o
}

// endCommand ends what is left of a host command's run: the host and its
// process group (the fake, if the host left it).
func (r *hostFixture) endCommand() error {
	if r.run == nil {
		return nil
	}
	select {
	case <-r.run.done:
	default:
		r.run.killed = true
	}
	killProcessGroup(r.run.cmd)
	<-r.run.done
	escaped := endMarked(r.run.marker, r.run.cmd.Process.Pid)
	if note := leftNote(r.run.held, escaped, endAdopted(r.run)); note != "" {
		return leftBehind(note)
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "(no output)"
	}
	return truncate(s, 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// reportFiles lists the report files of every fake the host started, the
// first first.
func (r *hostFixture) reportFiles() []string {
	files, _ := filepath.Glob(filepath.Join(r.dir, r.name+"-*.json"))
	return files
}

// startCheck is the battery's start: a Go Host is started against the
// fake; a host command is run once against it and must at least finish
// the handshake (the fake answered its initialize or server/discover).
// What that run sent goes to first.
func (r *hostFixture) startCheck(ctx context.Context, first *firstRun) error {
	if r.command == nil {
		return r.start(ctx)
	}
	if err := r.startWith(ctx); err != nil {
		return err
	}
	o := r.waitCommand(ctx, r.cfg.StartTimeout)
	// The fake writes its report as it goes, on a goroutine of its own: a
	// host that exits as soon as it has its answer can be gone before the
	// report shows the handshake or the call. The report is whole once the
	// fake has ended (see fakeEnded).
	if !r.run.killed {
		r.waitReport(ctx, fakeEnded)
	}
	if err := r.recordErr(); err != nil {
		return err
	}
	rep, _ := r.fakeReport()
	first.sent = requestMethods(rep)
	for _, q := range rep.Requests {
		first.called = first.called || q.Method == wire.MethodToolsCall
	}
	if !shookHands(rep) {
		return fmt.Errorf("the host finished no handshake with the fake (requests the fake saw: %s); it ended with %s", first.sent, o.how())
	}
	return nil
}

// shookHands reports whether the fake answered an initialize or a
// server/discover.
func shookHands(rep fakeserver.Report) bool {
	return slices.ContainsFunc(rep.Requests, func(q fakeserver.RequestRecord) bool {
		return (q.Method == wire.MethodInitialize || q.Method == wire.MethodDiscover) && q.State == fakeserver.StateDone && q.ResponseBytes > 0
	})
}

// firstRun is what a host command sent in the battery's first run.
type firstRun struct {
	sent   string // the methods of its requests, in order
	called bool   // one was a tools/call
}

// callCriteria are the criteria that judge a host command by a tool call
// it makes.
var callCriteria = []string{"under-limit", "over-limit", "huge-field", "many-blocks", "idle-notifications",
	"host-timeout", "progress-forever", "late-after-cancel", "crash-mid-call", "stdin-not-read", "close-bounded"}

// needCall makes the call criteria skip for a host command whose first run
// made no tools/call: it calls tools only on its own (an agent CLI,
// through its model), and the criteria after the handshake judge it.
func (f *firstRun) needCall(criteria []criterion[*hostFixture]) []criterion[*hostFixture] {
	out := slices.Clone(criteria)
	for i, c := range out {
		if !slices.Contains(callCriteria, c.name) {
			continue
		}
		out[i].run = func(ctx context.Context, r *hostFixture) Result {
			if !f.called {
				return skip("needs a tool call: the host's first run made none (it sent %s)", f.sent)
			}
			return c.run(ctx, r)
		}
	}
	return out
}

// startRule is the rule of the battery's start.
func startRule(command *HostCommand) string {
	if command != nil {
		return ruleHostCommand
	}
	return ruleHostAdapter
}
