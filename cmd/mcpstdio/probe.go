package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

const probeUsage = `usage: mcpstdio probe [flags] -- <server command...>
       mcpstdio probe [flags]

Runs the server release criteria against a stdio MCP server, each with a
fresh server process, and prints one line per criterion and a summary
(on a terminal, a status line on stderr shows the criterion running).
Without a server command, runs them against the built-in fake server, good
and naive.

Exit status: 0 no criterion failed (warnings and skips allowed; with
-expect, every verdict is the expected one; with -baseline, nothing got
worse than the baseline); 1 a criterion failed, something got worse than
the baseline, or the server could not be probed; 2 usage error.

A tool call is a tool name, optionally followed by a space and its
arguments as a JSON object: -large 'read_file {"path":"big.log"}'.
Criteria whose tool call is not given are skipped.

-json prints one JSON report per line on stdout (one line for a server,
one per fake without a server command), the progress lines going to
stderr. Besides the criteria, its results may hold "start" (the server
could not be started and negotiated: no criterion ran) and "interrupted"
(a signal stopped the run: the criteria not finished are named).

flags:
`

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
type expectFlag struct{ m map[string]assertions.Verdict }

func (f *expectFlag) String() string {
	if f == nil || f.m == nil {
		return ""
	}
	var pairs []string
	for _, name := range assertions.ServerCriterionNames() {
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
		case !slices.Contains(assertions.ServerCriterionNames(), name):
			return fmt.Errorf("%q names no criterion (they are: %s)", name, strings.Join(assertions.ServerCriterionNames(), ", "))
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

	maxFrame, pipeCapacity, oversized, flood, contentBudget int
	within, cancelGrace, shutdownGrace, slowDuration        time.Duration

	expect          expectFlag
	run             string
	junit, baseline string
	verbose, json   bool
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
	fs.DurationVar(&f.cancelGrace, "cancel-grace", 0, "how long work may go on after a cancel (0: 200ms)")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 0, "how long the server has to exit after stdin EOF or SIGTERM (0: 2s)")
	fs.IntVar(&f.oversized, "oversized-request", 0, "size in `bytes` of the oversized request line (0: 32 MiB)")
	fs.IntVar(&f.flood, "flood", 0, "least `number` of tools/call requests written while the server's stdout is blocked; more if needed to write 8 times the stdin pipe's capacity (0: 500)")
	fs.IntVar(&f.contentBudget, "content-budget", 0, "`bytes` the -bounded call's result must fit (0: 64 KiB)")
	fs.Var(&f.expect, "expect", "verdicts the server is known to get, as `criterion=verdict,...`; an expected one does not fail the probe (marked *), and any other verdict of that criterion, even a pass, does: update the list (server command only)")
	fs.StringVar(&f.run, "run", "", "run only the criteria whose names match `regexp`")
	fs.BoolVar(&f.verbose, "v", false, "print each criterion's rule, protocol and full diagnosis, whatever its verdict")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON on stdout, one line per report (progress goes to stderr)")
	fs.StringVar(&f.junit, "junit", "", "also write the report as JUnit XML to `file`: one testcase per criterion")
	fs.StringVar(&f.baseline, "baseline", "", "compare with an earlier -json report in `file`, print what changed, and exit 0 only if no criterion got worse (fail < skip < warn < pass; a new criterion that fails is worse) (server command only)")
}

// config turns the flags into a battery configuration, or a usage error.
func (f *probeFlags) config() (assertions.ServerConfig, error) {
	cfg := assertions.ServerConfig{
		Large:            f.large.call,
		Slow:             f.slow.call,
		Cheap:            f.cheap.call,
		Bounded:          f.bounded.call,
		ContentBudget:    f.contentBudget,
		OversizedRequest: f.oversized,
		Flood:            f.flood,
		PipeCapacity:     f.pipeCapacity,
		Within:           f.within,
		CancelGrace:      f.cancelGrace,
		ShutdownGrace:    f.shutdownGrace,
		SlowDuration:     f.slowDuration,
		Expect:           f.expect.m,
	}
	for name, v := range map[string]int{"max-frame": f.maxFrame, "pipe-capacity": f.pipeCapacity,
		"oversized-request": f.oversized, "flood": f.flood, "content-budget": f.contentBudget} {
		if v < 0 {
			return cfg, fmt.Errorf("-%s %d: must not be negative", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"within": f.within, "cancel-grace": f.cancelGrace,
		"shutdown-grace": f.shutdownGrace, "slow-duration": f.slowDuration} {
		if d < 0 {
			return cfg, fmt.Errorf("-%s %v: must not be negative", name, d)
		}
	}
	if f.run != "" {
		re, err := regexp.Compile(f.run)
		if err != nil {
			return cfg, fmt.Errorf("-run: %v", err)
		}
		if !slices.ContainsFunc(assertions.ServerCriterionNames(), re.MatchString) {
			return cfg, fmt.Errorf("-run %q matches no criterion (they are: %s)", f.run, strings.Join(assertions.ServerCriterionNames(), ", "))
		}
		cfg.Run = re
	}
	if f.maxFrame > 0 {
		cfg.Options = append(cfg.Options, mcptest.WithMaxFrame(f.maxFrame))
	}
	return cfg, nil
}

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio probe", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f probeFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, probeUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		}
		return usageError(stderr, err)
	}
	if fs.NArg() == 0 && endedByDashDash(fs, args) {
		return usageError(stderr, errors.New(`no server command after "--" (to probe the built-in fake server, leave out "--")`))
	}
	cfg, err := f.config()
	if err != nil {
		return usageError(stderr, err)
	}
	demo := fs.NArg() == 0
	if demo && (f.baseline != "" || f.expect.m != nil) {
		return usageError(stderr, errors.New("-baseline and -expect need a server command (the built-in fakes have expectations of their own)"))
	}
	var base *assertions.Report
	if f.baseline != "" {
		if base, err = readBaseline(f.baseline); err != nil {
			return usageError(stderr, err)
		}
	}
	// The JUnit file is created now, so that a path that cannot be written
	// is a usage error before the criteria run, not after.
	var junit *os.File
	if f.junit != "" {
		if junit, err = os.Create(f.junit); err != nil {
			return usageError(stderr, fmt.Errorf("-junit: %v", err))
		}
		defer junit.Close()
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &output{p: newPrinter(ctx, stdout, stderr, &f)}
	if f.json {
		out.json = stdout
	}
	defer out.p.close()
	var code int
	if demo {
		code = runDemo(ctx, cfg, out, stderr)
	} else {
		code = probeServer(ctx, fs.Args(), cfg, base, out, stderr)
	}
	out.p.close()
	if junit != nil {
		err := writeJUnit(junit, out.reports)
		if cerr := junit.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpstdio probe: -junit: %v\n", err)
			code = 1
		}
	}
	return code
}

// probeServer probes the server argv and returns the exit status.
func probeServer(ctx context.Context, argv []string, cfg assertions.ServerConfig, base *assertions.Report, out *output, stderr io.Writer) int {
	rep, err := probe(ctx, argv, cfg, out.p)
	out.add(rep)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio probe: %v\n", err)
		return 1
	}
	if base != nil {
		changes := compareReports(base, rep)
		out.p.changes(base, rep, changes)
		if worse(changes) > 0 {
			return 1
		}
		return 0
	}
	if rep.Err() != nil {
		return 1
	}
	return 0
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

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "mcpstdio probe: %v (see mcpstdio probe -h)\n", err)
	return 2
}

// output collects the reports of a run and prints each as a JSON line as
// soon as it is complete, with -json.
type output struct {
	p       *printer
	json    io.Writer // nil without -json
	reports []*assertions.Report
}

func (o *output) add(rep *assertions.Report) {
	o.reports = append(o.reports, rep)
	if o.json == nil {
		return
	}
	b, err := json.Marshal(rep)
	if err != nil {
		panic(err) // a Report always encodes
	}
	o.json.Write(append(b, '\n')) // nothing useful to do if stdout is gone
}

// The results that are not criteria: "start" when the server could not be
// probed at all, "interrupted" when a signal stopped the run.
const (
	resultStart       = "start"
	resultInterrupted = "interrupted"
	ruleStart         = "the server starts from its command and negotiates MCP (server/discover, else initialize)"
)

// probe checks that the server starts and speaks MCP, then runs the
// criteria, printing each result as it is known and the summary. It always
// returns a report, of the command argv. The error is for a server that
// could not be probed at all (the report's one result is "start") or an
// interrupt (the criteria it cut short are dropped from the report, and
// named by its last result, "interrupted"); it names the command.
func probe(ctx context.Context, argv []string, cfg assertions.ServerConfig, p *printer) (*assertions.Report, error) {
	target := mcptest.Command(argv[0], argv[1:]...)
	rep := &assertions.Report{Subject: shellQuote(argv), Command: argv}
	p.begin(rep.Subject, cfg)
	begin := time.Now()
	err := preflight(ctx, target, cfg, p)
	switch {
	case ctx.Err() != nil:
		return interrupted(rep, p, begin), errInterrupted
	case err != nil:
		p.live.pause()
		first, rest, _ := strings.Cut(err.Error(), "\n")
		rep.Results = []assertions.Result{{Name: resultStart, Verdict: assertions.Fail, Evidence: first, Details: rest,
			Rule: ruleStart, Duration: time.Since(begin)}}
		rep.Duration = time.Since(begin)
		if p.verbose && rest != "" {
			return rep, fmt.Errorf("%s: %s\n%s", rep.Subject, first, indent(rest))
		}
		return rep, fmt.Errorf("%s: %s", rep.Subject, first)
	}
	got := assertions.CheckServerStream(ctx, target, cfg, p.result)
	p.live.pause()
	rep.Results, rep.Duration = got.Results, got.Duration
	if ctx.Err() != nil {
		return interrupted(rep, p, begin), errInterrupted
	}
	p.summary(rep)
	return rep, nil
}

var errInterrupted = errors.New("interrupted")

// interrupted cuts rep down to the results shown before the interrupt and
// adds one that names the criteria it stopped.
func interrupted(rep *assertions.Report, p *printer, begin time.Time) *assertions.Report {
	p.live.pause()
	rep.Results = append(rep.Results[:p.shown:p.shown], assertions.Result{Name: resultInterrupted, Verdict: assertions.Fail,
		Evidence: "interrupted by a signal before these criteria finished: " + strings.Join(p.pending, ", ")})
	if rep.Duration == 0 { // interrupted before the criteria began
		rep.Duration = time.Since(begin)
	}
	return rep
}

// preflightGrace bounds each step of closing the preflight session: its
// shutdown is judged by the criteria, not here.
const preflightGrace = 200 * time.Millisecond

// preflight starts the server once and negotiates, so that a server that
// does not start or does not speak MCP is one error line instead of one
// failure per criterion. On success it prints the report's heading.
func preflight(ctx context.Context, target mcptest.Target, cfg assertions.ServerConfig, p *printer) error {
	opts := []mcptest.Option{mcptest.WithGrace(preflightGrace)}
	if cfg.Within > 0 {
		opts = append(opts, mcptest.WithTimeout(cfg.Within))
	}
	if cfg.PipeCapacity > 0 {
		opts = append(opts, mcptest.WithPipeCapacity(cfg.PipeCapacity))
	}
	opts = append(opts, cfg.Options...)
	begin := time.Now()
	s, err := mcptest.Start(ctx, target, opts...)
	if err != nil {
		return fmt.Errorf("could not start it and negotiate MCP: %s", strings.TrimSpace(err.Error()))
	}
	version := s.ProtocolVersion()
	took := time.Since(begin)
	closeErr := s.Close()
	p.heading(version, took, closeErr)
	return nil
}

// printer prints what a person reads: the heading, the results as they
// come, the summary. Beside it, on a terminal, a live status line shows the
// criterion running.
type printer struct {
	w       io.Writer
	verbose bool
	ctx     context.Context // once it is done, results are cut short: not shown
	live    *liveStatus     // nil unless stderr is a terminal

	subject string
	shown   int      // results of the current report shown
	pending []string // criteria of the current report not reported yet, in the order they run
}

// newPrinter prints to stdout, or to stderr with -json; the live status
// goes to stderr if it is a terminal.
func newPrinter(ctx context.Context, stdout, stderr io.Writer, f *probeFlags) *printer {
	p := &printer{w: stdout, verbose: f.verbose, ctx: ctx}
	if f.json {
		p.w = stderr
	}
	if file, ok := stderr.(*os.File); ok {
		if width, ok := terminalWidth(file); ok {
			p.live = startLiveStatus(stderr, width, statusEvery)
		}
	}
	return p
}

// begin starts a report: the criteria cfg selects are pending, and the
// server is being started.
func (p *printer) begin(subject string, cfg assertions.ServerConfig) {
	p.subject, p.shown, p.pending = subject, 0, nil
	for _, name := range assertions.ServerCriterionNames() {
		if cfg.Run == nil || cfg.Run.MatchString(name) {
			p.pending = append(p.pending, name)
		}
	}
	p.live.show("(starting the server)")
}

// heading prints the report's first line once the server is known to
// start, and starts the live status of the first criterion.
func (p *printer) heading(version string, took time.Duration, closeErr error) {
	p.live.pause()
	fmt.Fprintln(p.w, p.subject)
	if p.verbose {
		fmt.Fprintf(p.w, "        started and negotiated protocol %s in %v\n", version, took.Round(time.Millisecond))
		if closeErr != nil {
			fmt.Fprintf(p.w, "        closing it: %s\n", firstLine(closeErr.Error()))
		}
	}
	p.next()
}

// next shows the criterion that runs next in the live status.
func (p *printer) next() {
	if len(p.pending) > 0 {
		p.live.show(p.pending[0])
	}
}

func (p *printer) result(res assertions.Result) {
	if p.ctx.Err() != nil {
		return
	}
	p.live.pause()
	p.shown++
	if len(p.pending) > 0 && p.pending[0] == res.Name {
		p.pending = p.pending[1:]
	}
	fmt.Fprintln(p.w, res.Line())
	if p.verbose {
		if res.Rule != "" {
			fmt.Fprintf(p.w, "        rule: %s\n", res.Rule)
		}
		if res.Era != "" {
			fmt.Fprintf(p.w, "        protocol: %s\n", res.Era)
		}
		if d := strings.TrimSpace(res.Details); d != "" {
			fmt.Fprintln(p.w, indent(d))
		}
	}
	p.next()
}

// summary prints the report's summary line.
func (p *printer) summary(rep *assertions.Report) {
	fmt.Fprintln(p.w, rep.Summary())
}

// close erases the live status and stops it.
func (p *printer) close() { p.live.close() }

func indent(s string) string {
	s = strings.TrimRight(s, "\n ")
	return "        " + strings.ReplaceAll(s, "\n", "\n        ")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// shellQuote writes argv as a shell would need it typed: arguments with
// characters other than letters, digits and -_./:=@%+, in single quotes.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		plain := a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:=@%+,", r)))
		}) < 0
		if plain {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
