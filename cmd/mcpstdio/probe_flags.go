package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// toolCallFlag is a flag whose value is a tool call: "name" or
// "name {json arguments}".
type toolCallFlag struct{ call *assertions.ToolCall }

func (f *toolCallFlag) String() string {
	if f == nil || f.call == nil {
		return ""
	}
	return f.call.String()
}

func (f *toolCallFlag) Set(s string) error {
	call, err := parseToolCall(s)
	if err != nil {
		return err
	}
	f.call = call
	return nil
}

// expectFlag is the -expect flag: criterion=verdict pairs, separated by
// commas; the flag may be given more than once.
type expectFlag struct {
	m     map[string]assertions.Verdict
	names []string // the criteria; nil: the server criteria
}

func (f *expectFlag) criteria() []string {
	if f.names != nil {
		return f.names
	}
	return assertions.ServerCriterionNames()
}

func (f *expectFlag) String() string {
	if f == nil || f.m == nil {
		return ""
	}
	var pairs []string
	for _, name := range f.criteria() {
		if v, ok := f.m[name]; ok {
			pairs = append(pairs, name+"="+string(v))
		}
	}
	return strings.Join(pairs, ",")
}

func (f *expectFlag) Set(s string) error {
	for _, pair := range strings.Split(s, ",") {
		name, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		verdict := assertions.Verdict(strings.ToLower(v))
		switch {
		case !ok || name == "":
			return fmt.Errorf("%q: want criterion=verdict", pair)
		case !slices.Contains(f.criteria(), name):
			return fmt.Errorf("%q names no criterion (they are: %s)", name, strings.Join(f.criteria(), ", "))
		case !slices.Contains(verdictOrder, verdict):
			return fmt.Errorf("%q: the verdict is one of pass, fail, warn, skip", pair)
		}
		if old, dup := f.m[name]; dup && old != verdict {
			return fmt.Errorf("%s expected both %s and %s", name, old, verdict)
		}
		if f.m == nil {
			f.m = map[string]assertions.Verdict{}
		}
		f.m[name] = verdict
	}
	return nil
}

// protocolPattern is the form of a protocol version.
var protocolPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// verdictOrder lists the verdicts from worst to best: the order -baseline
// compares them in.
var verdictOrder = []assertions.Verdict{assertions.Fail, assertions.Skip, assertions.Warn, assertions.Pass}

// parseToolCall parses "name" or "name {json arguments}". Numbers in the
// arguments keep their exact text.
func parseToolCall(s string) (*assertions.ToolCall, error) {
	s = strings.TrimSpace(s)
	name, args := s, ""
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		name, args = s[:i], strings.TrimSpace(s[i:])
	}
	if name == "" || strings.HasPrefix(name, "{") {
		return nil, errors.New(`want a tool name, optionally followed by a space and a JSON object of arguments`)
	}
	call := &assertions.ToolCall{Name: name}
	if args == "" {
		return call, nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("arguments of %s: want a JSON object, got %q", name, args)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("arguments of %s: unexpected text after the JSON object in %q", name, args)
	}
	call.Arguments = m
	return call, nil
}

// probeFlags are probe's command-line flags.
type probeFlags struct {
	large, slow, cheap, bounded toolCallFlag

	maxFrame, pipeCapacity, oversized, flood, contentBudget, cancelAfter int
	within, cancelGrace, shutdownGrace, slowDuration, startTimeout       time.Duration
	protocol                                                             string
	configFile                                                           string

	reportFlags
}

func (f *probeFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.large, "large", "`tool call` whose response is much larger than the pipe capacity")
	fs.Var(&f.slow, "slow", "`tool call` that works for seconds unless cancelled")
	fs.Var(&f.cheap, "cheap", "cheap `tool call` that works. It replaces the second request that shows the session goes on (invalid-json-input, oversized-input, stall-cancel-recover, the three cancel criteria, era; default ping or server/discover, by protocol era), stdout-clean's tool call (default the -large call), and each request of the reads-while-blocked flood (default a tools/call of mcpstdio-no-such-tool, a tool that does not exist, which still goes through the server's tool-call path)")
	fs.Var(&f.bounded, "bounded", "`tool call` that could return a lot; its result must keep to -content-budget")
	fs.DurationVar(&f.slowDuration, "slow-duration", 0, "how long the -slow call works when not cancelled; after a cancel the cancel criteria watch this long (at most 4×-within) for a late response (0: unknown, watch 5×-cancel-grace)")
	fs.IntVar(&f.maxFrame, "max-frame", 0, "transport limit: most `bytes` in one message from the server (0: 16 MiB)")
	fs.IntVar(&f.pipeCapacity, "pipe-capacity", 0, "capacity in `bytes` of the server's stdin and stdout pipes, Linux only (0: 16 KiB on Linux, the system's elsewhere)")
	fs.DurationVar(&f.within, "within", 0, "bound of each step of a criterion (0: 5s)")
	fs.DurationVar(&f.startTimeout, "start-timeout", 0, "bound of starting the server and negotiating, once first and for each criterion; never counted in -within (0: 30s)")
	fs.StringVar(&f.protocol, "protocol", "", "pin the protocol `version` every session uses (e.g. 2025-11-25: initialize offers it; 2026-07-28: no handshake) instead of negotiating by the server/discover probe")
	fs.DurationVar(&f.cancelGrace, "cancel-grace", 0, "how long work may go on after a cancel (0: 200ms)")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 0, "how long the server has to exit after stdin EOF or SIGTERM (0: 2s)")
	fs.IntVar(&f.oversized, "oversized-request", 0, "size in `bytes` of the oversized request line (0: 32 MiB)")
	fs.IntVar(&f.flood, "flood", 0, "least `number` of tools/call requests written while the server's stdout is blocked; more if needed to write 8 times the stdin pipe's capacity (0: 500)")
	fs.IntVar(&f.cancelAfter, "cancel-after", 0, "`bytes` of the -large response cancel-after-output-began lets through before it holds reads and cancels (0: 32 KiB; a shorter response is a skip)")
	fs.IntVar(&f.contentBudget, "content-budget", 0, "`bytes` the -bounded call's result must fit (0: 64 KiB)")
	fs.StringVar(&f.configFile, "config", "", "probe the stdio servers of an agent's config `file` (Claude Code, Claude Desktop, Cursor, Gemini CLI, Qwen Code, VS Code, opencode, Codex), each with its command, arguments, environment and working directory, and print one table of their verdicts; server names after the flags choose some")
	f.reportFlags.register(fs, "server", " (server command only)")
}

// config turns the flags into a battery configuration, or a usage error.
func (f *probeFlags) config() (assertions.ServerConfig, error) {
	cfg := assertions.ServerConfig{
		Large:            f.large.call,
		Slow:             f.slow.call,
		Cheap:            f.cheap.call,
		Bounded:          f.bounded.call,
		ContentBudget:    f.contentBudget,
		CancelAfter:      f.cancelAfter,
		OversizedRequest: f.oversized,
		Flood:            f.flood,
		PipeCapacity:     f.pipeCapacity,
		Within:           f.within,
		CancelGrace:      f.cancelGrace,
		ShutdownGrace:    f.shutdownGrace,
		SlowDuration:     f.slowDuration,
		StartTimeout:     f.startTimeout,
		Protocol:         f.protocol,
		Expect:           f.expect.m,
	}
	for name, v := range map[string]int{"max-frame": f.maxFrame, "pipe-capacity": f.pipeCapacity,
		"oversized-request": f.oversized, "flood": f.flood, "content-budget": f.contentBudget, "cancel-after": f.cancelAfter} {
		if v < 0 {
			return cfg, fmt.Errorf("-%s %d: must not be negative", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"within": f.within, "cancel-grace": f.cancelGrace,
		"shutdown-grace": f.shutdownGrace, "slow-duration": f.slowDuration, "start-timeout": f.startTimeout} {
		if d < 0 {
			return cfg, fmt.Errorf("-%s %v: must not be negative", name, d)
		}
	}
	if f.protocol != "" && !protocolPattern.MatchString(f.protocol) {
		return cfg, fmt.Errorf("-protocol %q: want a version such as 2025-11-25", f.protocol)
	}
	var err error
	if cfg.Run, err = compileRun(f.run, assertions.ServerCriterionNames()); err != nil {
		return cfg, err
	}
	if f.maxFrame > 0 {
		cfg.Options = append(cfg.Options, mcptest.WithMaxFrame(f.maxFrame))
	}
	return cfg, nil
}

// endedByDashDash reports whether parsing args with fs stopped at a "--"
// (and not at a "--" that is a flag's value, as in "-run --"), walking the
// arguments as package flag does. args have parsed without error.
func endedByDashDash(fs *flag.FlagSet, args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return true
		}
		if len(a) < 2 || a[0] != '-' {
			return false
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		fl := fs.Lookup(name)
		if fl == nil {
			return false
		}
		if b, ok := fl.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the flag's value
	}
	return false
}

// compileRun compiles the -run flag, which must match one of names; empty
// selects everything (nil).
func compileRun(run string, names []string) (*regexp.Regexp, error) {
	if run == "" {
		return nil, nil
	}
	re, err := regexp.Compile(run)
	if err != nil {
		return nil, fmt.Errorf("-run: %v", err)
	}
	if !slices.ContainsFunc(names, re.MatchString) {
		return nil, fmt.Errorf("-run %q matches no criterion (they are: %s)", run, strings.Join(names, ", "))
	}
	return re, nil
}

// reportFlags are the flags probe and hostprobe share: which criteria run,
// the verdicts expected, and how the report is written.
type reportFlags struct {
	expect          expectFlag
	run             string
	junit, baseline string
	verbose, json   bool
}

// register defines the flags; subject is what is probed, note what ends
// the usage of -expect and -baseline.
func (f *reportFlags) register(fs *flag.FlagSet, subject, note string) {
	fs.Var(&f.expect, "expect", "verdicts the "+subject+" is known to get, as `criterion=verdict,...`; an expected one does not fail the probe (marked *), and any other verdict of that criterion, even a pass, does: update the list"+note)
	fs.StringVar(&f.run, "run", "", "run only the criteria whose names match `regexp`; the criteria, in the order they run: "+strings.Join(f.expect.criteria(), ", "))
	fs.BoolVar(&f.verbose, "v", false, "print each criterion's rule, protocol and full diagnosis, whatever its verdict")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON on stdout, one line per report (progress goes to stderr)")
	fs.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML to `file`: one testcase per criterion")
	fs.StringVar(&f.baseline, "baseline", "", "compare with an earlier -json report in `file`, print what changed, and exit 0 only if no criterion got worse (fail < skip < warn < pass; a new criterion that fails is worse)"+note)
}

// parseFlags defines f's flags on fs and parses args: on -h it prints
// usage and the flags to stdout, on a bad flag a usage error to stderr, and
// returns false with the exit status (0 and 2).
func parseFlags(fs *flag.FlagSet, f interface{ register(*flag.FlagSet) }, args []string, usage string, stdout, stderr io.Writer) (ok bool, code int) {
	f.register(fs)
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return false, 0
	case err != nil:
		return false, usageError(stderr, fs, err)
	}
	return true, 0
}

// usageError prints err as a usage error of fs's command and returns the
// exit status 2.
func usageError(stderr io.Writer, fs *flag.FlagSet, err error) int {
	fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", fs.Name(), err, fs.Name())
	return 2
}

// open reads the -baseline report and creates the -junit file, when they
// are given: the JUnit file now, so that a path that cannot be written is
// a usage error before the criteria run, not after. The caller closes
// junit.
func (f *reportFlags) open() (base *assertions.Report, junit *os.File, err error) {
	if f.baseline != "" {
		if base, err = readBaseline(f.baseline); err != nil {
			return nil, nil, err
		}
	}
	if f.junit != "" {
		if junit, err = os.Create(f.junit); err != nil {
			return nil, nil, fmt.Errorf("-junit: %v", err)
		}
	}
	return base, junit, nil
}

// configFlags maps the ServerConfig fields that skip reasons name to the
// probe flags that set them.
var configFlags = strings.NewReplacer("(ServerConfig.Large)", "(-large)", "(ServerConfig.Slow)", "(-slow)", "(ServerConfig.Bounded)", "(-bounded)")

// flagWords puts, in a result's evidence, the probe flag where the library
// names the ServerConfig field: the user of the command typed the flag.
func flagWords(r assertions.Result) assertions.Result {
	r.Evidence = configFlags.Replace(r.Evidence)
	return r
}
