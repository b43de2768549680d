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
fresh server process, and prints one line per criterion and a summary.
Without a server command, runs them against the built-in fake server, good
and naive. Exit status: 0 no criterion failed, 1 a criterion failed or the
server could not be probed, 2 usage error.

A tool call is a tool name, optionally followed by a space and its
arguments as a JSON object: -large 'read_file {"path":"big.log"}'.
Criteria whose tool call is not given are skipped.

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
	within, cancelGrace, shutdownGrace                      time.Duration

	run           string
	verbose, json bool
}

func (f *probeFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.large, "large", "`tool call` whose response is much larger than the pipe capacity")
	fs.Var(&f.slow, "slow", "`tool call` that works for seconds unless cancelled")
	fs.Var(&f.cheap, "cheap", "`tool call` used as the cheap second request (default ping or server/discover)")
	fs.Var(&f.bounded, "bounded", "`tool call` that could return a lot; its result must keep to -content-budget")
	fs.IntVar(&f.maxFrame, "max-frame", 0, "transport limit: most `bytes` in one message from the server (0: 16 MiB)")
	fs.IntVar(&f.pipeCapacity, "pipe-capacity", 0, "capacity in `bytes` of the server's stdin and stdout pipes, Linux only (0: 16 KiB on Linux, the system's elsewhere)")
	fs.DurationVar(&f.within, "within", 0, "bound of each step of a criterion (0: 5s)")
	fs.DurationVar(&f.cancelGrace, "cancel-grace", 0, "how long work may go on after a cancel (0: 200ms)")
	fs.DurationVar(&f.shutdownGrace, "shutdown-grace", 0, "how long the server has to exit after stdin EOF or SIGTERM (0: 2s)")
	fs.IntVar(&f.oversized, "oversized-request", 0, "size in `bytes` of the oversized request line (0: 32 MiB)")
	fs.IntVar(&f.flood, "flood", 0, "`number` of requests written while the server's stdout is blocked (0: 500)")
	fs.IntVar(&f.contentBudget, "content-budget", 0, "`bytes` the -bounded call's result must fit (0: 64 KiB)")
	fs.StringVar(&f.run, "run", "", "run only the criteria whose names match `regexp`")
	fs.BoolVar(&f.verbose, "v", false, "print each criterion's rule and diagnosis")
	fs.BoolVar(&f.json, "json", false, "print the report as JSON on stdout (progress goes to stderr)")
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
	}
	for name, v := range map[string]int{"max-frame": f.maxFrame, "pipe-capacity": f.pipeCapacity,
		"oversized-request": f.oversized, "flood": f.flood, "content-budget": f.contentBudget} {
		if v < 0 {
			return cfg, fmt.Errorf("-%s %d: must not be negative", name, v)
		}
	}
	for name, d := range map[string]time.Duration{"within": f.within, "cancel-grace": f.cancelGrace, "shutdown-grace": f.shutdownGrace} {
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
	cfg, err := f.config()
	if err != nil {
		return usageError(stderr, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if fs.NArg() == 0 {
		return runDemo(ctx, &f, cfg, stdout, stderr)
	}
	argv := fs.Args()
	target := mcptest.Command(argv[0], argv[1:]...)
	p := &printer{w: stdout, verbose: f.verbose, ctx: ctx}
	if f.json {
		p.w = stderr
	}
	rep, err := probe(ctx, target, cfg, p)
	if f.json {
		out := probeOutput{Report: rep}
		if rep == nil {
			out.Report = &assertions.Report{Subject: target.String(), Results: []assertions.Result{}}
		}
		if err != nil {
			out.Error = err.Error()
		}
		writeJSON(stdout, out)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio probe: %v\n", err)
		return 1
	}
	if rep.Count(assertions.Fail) > 0 {
		return 1
	}
	return 0
}

// probeOutput is the JSON of one probe: the report, and the error that
// stopped it, if any (a server that could not be probed: no results; an
// interrupt: the results finished before it).
type probeOutput struct {
	*assertions.Report
	Error string `json:"error,omitempty"`
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "mcpstdio probe: %v (see mcpstdio probe -h)\n", err)
	return 2
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v) // nothing useful to do if stdout is gone
}

// probe checks that the server starts and speaks MCP, then runs the
// criteria, printing each result as it is known and the summary. The error
// is for a server that could not be probed at all; it names the target.
//
// When ctx ends (an interrupt), the criteria it cut short are dropped from
// the report and errInterrupted is returned with it.
func probe(ctx context.Context, target mcptest.Target, cfg assertions.ServerConfig, p *printer) (*assertions.Report, error) {
	if err := preflight(ctx, target, cfg, p); err != nil {
		if ctx.Err() != nil {
			return nil, errInterrupted
		}
		return nil, fmt.Errorf("%s: %w", target, err)
	}
	p.shown = 0
	rep := assertions.CheckServerStream(ctx, target, cfg, p.result)
	if ctx.Err() != nil {
		rep.Results = rep.Results[:p.shown]
		return rep, errInterrupted
	}
	p.summary(rep)
	return rep, nil
}

var errInterrupted = errors.New("interrupted")

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
		first, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
		if p.verbose && rest != "" {
			return fmt.Errorf("could not start it and negotiate MCP: %s\n%s", first, indent(rest))
		}
		return fmt.Errorf("could not start it and negotiate MCP: %s", first)
	}
	version := s.ProtocolVersion()
	took := time.Since(begin)
	closeErr := s.Close()
	fmt.Fprintln(p.w, target)
	if p.verbose {
		fmt.Fprintf(p.w, "        started and negotiated protocol %s in %v\n", version, took.Round(time.Millisecond))
		if closeErr != nil {
			fmt.Fprintf(p.w, "        closing it: %s\n", firstLine(closeErr.Error()))
		}
	}
	return nil
}

// printer prints results as they come.
type printer struct {
	w       io.Writer
	verbose bool
	ctx     context.Context // once it is done, results are cut short: not shown
	shown   int             // results of the current report shown
}

func (p *printer) result(res assertions.Result) {
	if p.ctx.Err() != nil {
		return
	}
	p.shown++
	fmt.Fprintln(p.w, res.Line())
	if !p.verbose {
		return
	}
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

// summary prints the report's summary line, as Report.String ends.
func (p *printer) summary(rep *assertions.Report) {
	s := strings.TrimSuffix(rep.String(), "\n")
	fmt.Fprintln(p.w, s[strings.LastIndexByte(s, '\n')+1:])
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n ")
	return "        " + strings.ReplaceAll(s, "\n", "\n        ")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
