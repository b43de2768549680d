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
	"strings"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/cmd/internal/watchdog"
	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

const probeUsage = `usage: mcpstdio probe [flags] -- <server command...>
       mcpstdio probe [flags] -config FILE [NAME...]
       mcpstdio probe [flags]

Runs the server release criteria against a stdio MCP server, each with a
fresh server process, and prints one line per criterion and a summary
(on a terminal, a status line on stderr shows the criterion running).
Without a server command, runs them against the built-in fake server, good
and naive, as child processes of this command, and says whether each
behaved as expected. Before the criteria, probe starts the server once and
negotiates; a server that does not start or does not speak MCP ends the
probe there with one error line.

If probe is killed (SIGKILL: a CI timeout, the OOM killer), on Linux the
server and everything it started die too, even under a wrapper that
ignores SIGTERM or after a setsid: a watchdog process (mcpstdio-watchdog)
kills them. Not ended then: a process that cleared its environment and
left the server's tree before probe's last look (five a second).

Exit status: 0 no criterion failed (warnings and skips allowed; with
-expect, every verdict is the expected one; with -baseline, nothing got
worse than the baseline); 1 a criterion failed, something got worse than
the baseline, or the server could not be probed; 2 usage error.

A tool call is a tool name, optionally followed by a space and its
arguments as a JSON object:

  mcpstdio probe -large 'read_file {"path":"big.log"}' -slow sleep -- ./myserver --stdio

Criteria whose tool call is not given are skipped.

With -config, probe reads the MCP servers of an agent's config file
(mcpServers: Claude Code's ~/.claude.json and .mcp.json, Claude Desktop,
Cursor, Gemini CLI and Qwen Code; VS Code's mcp.json; opencode.json;
Codex's config.toml) and probes each stdio server in it, or those NAMEd,
with its command, arguments, environment and working directory, and its
variables expanded as its host does; then it prints one table, a column
per server. Remote servers, and servers turned off unless named, are
listed as not probed. An entry that runs mcpstdio's proxy is probed
without it. -large, -slow, -cheap, -bounded, -expect and -baseline need
one server named.

-json prints one JSON report per line on stdout (one line for a server,
one per fake without a server command), the progress lines going to
stderr. Besides the criteria, its results may hold "start" (the server
could not be started and negotiated: no criterion ran) and "interrupted"
(a signal stopped the run: the criteria not finished are named).

flags:
`

func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio probe", flag.ContinueOnError)
	var f probeFlags
	if ok, code := parseFlags(fs, &f, args, probeUsage, stdout, stderr); !ok {
		return code
	}
	if f.configFile != "" {
		return runProbeConfig(ctx, fs, &f, args, stdout, stderr)
	}
	if fs.NArg() == 0 && endedByDashDash(fs, args) {
		return usageError(stderr, fs, errors.New(`no server command after "--" (to probe the built-in fake server, leave out "--")`))
	}
	cfg, err := f.config()
	if err != nil {
		return usageError(stderr, fs, err)
	}
	demo := fs.NArg() == 0
	if demo && (f.baseline != "" || f.expect.m != nil) {
		return usageError(stderr, fs, errors.New("-baseline and -expect need a server command (the built-in fakes have expectations of their own)"))
	}
	base, junit, err := f.open()
	if err != nil {
		return usageError(stderr, fs, err)
	}
	if junit != nil {
		defer junit.Close()
	}

	return withOutput(ctx, "mcpstdio probe", stdout, stderr, f.verbose, f.json, junit, func(ctx context.Context, out *output) int {
		if demo {
			return runDemo(ctx, cfg, out, stderr)
		}
		return probeServer(ctx, fs.Args(), cfg, base, out, stderr)
	})
}

// withOutput runs run, under a watchdog (cmd/internal/watchdog), with the output of a probe (the printer, -json on
// stdout, interrupts by a signal), then writes the JUnit file, if any; it
// returns run's exit status, or 1 if the JUnit file could not be written.
func withOutput(ctx context.Context, cmd string, stdout, stderr io.Writer, verbose, json bool, junit *os.File, run func(context.Context, *output) int) int {
	// Whatever run starts dies with this process, if it is killed (Linux).
	if g, err := watchdog.Start(); err == nil {
		defer g.Close()
	} else if !errors.Is(err, errors.ErrUnsupported) {
		fmt.Fprintf(stderr, "%s: %v: if this process is killed, what its children started may run on\n", cmd, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := &output{p: newPrinter(ctx, stdout, stderr, verbose, json)}
	if json {
		out.json = stdout
	}
	defer out.p.close()
	code := run(ctx, out)
	out.p.close()
	if junit != nil {
		err := writeJUnit(junit, out.reports)
		if cerr := junit.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			fmt.Fprintf(stderr, "%s: -junit: %v\n", cmd, err)
			code = 1
		}
	}
	return code
}

// probeServer probes the server argv and returns the exit status.
// A criterion skipped for want of a tool call is followed, after the
// summary, by the flag that would run it with an example from the server's
// tools/list.
func probeServer(ctx context.Context, argv []string, cfg assertions.ServerConfig, base *assertions.Report, out *output, stderr io.Writer) int {
	rep, err := probe(ctx, argv, cfg, out.p)
	if err == nil {
		printSkipHints(ctx, out.p.w, mcptest.Command(argv[0], argv[1:]...), cfg, rep)
	}
	return exitStatus("mcpstdio probe", rep, err, base, out, stderr)
}

// exitStatus adds the report of a probe to the output and returns the exit
// status: 1 if it could not be run (err, which is printed), if a criterion
// failed or, with a baseline, if a verdict got worse.
func exitStatus(cmd string, rep *assertions.Report, err error, base *assertions.Report, out *output, stderr io.Writer) int {
	out.add(rep)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, term.Block(err.Error())) // it may quote the server's stderr
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
// probed at all (the battery's), "interrupted" when a signal stopped the
// run.
const (
	resultStart       = "start"
	resultInterrupted = "interrupted"
)

// probe runs the criteria (the battery first starts the server once and
// negotiates), printing each result as it is known and the summary. It
// always returns a report, of the command argv. The error is for a server
// that could not be probed at all (the report's one result is "start") or
// an interrupt (the criteria it cut short are dropped from the report, and
// named by its last result, "interrupted"); it names the command.
func probe(ctx context.Context, argv []string, cfg assertions.ServerConfig, p *printer) (*assertions.Report, error) {
	return probeAs(ctx, argv, argv, cfg, p)
}

// probeAs is probe with the report's subject given: the demo names its fake
// "mcpstdio fake", not by the path of a go run build.
func probeAs(ctx context.Context, argv, subject []string, cfg assertions.ServerConfig, p *printer) (*assertions.Report, error) {
	target := mcptest.Command(argv[0], argv[1:]...)
	return probeWith(ctx, argv, subject, assertions.ServerCriterionNames(), cfg.Run, p, func(ctx context.Context, progress func(assertions.Result)) *assertions.Report {
		return assertions.CheckServerStream(ctx, target, cfg, progress)
	})
}

// probeWith is probe with the battery given: check runs the criteria of
// names that run selects, against the command argv, shown as subject.
func probeWith(ctx context.Context, argv, subject, names []string, run *regexp.Regexp, p *printer, check func(context.Context, func(assertions.Result)) *assertions.Report) (*assertions.Report, error) {
	rep := &assertions.Report{Subject: shellQuote(subject), Command: argv}
	p.begin(rep.Subject, names, run)
	begin := time.Now()
	got := check(ctx, func(r assertions.Result) { p.result(flagWords(r)) })
	p.live.pause()
	rep.Results, rep.Duration = got.Results, got.Duration
	for i := range rep.Results {
		rep.Results[i] = flagWords(rep.Results[i])
	}
	if ctx.Err() != nil {
		return interrupted(rep, p, begin), errInterrupted
	}
	if len(rep.Results) == 1 && rep.Results[0].Name == resultStart {
		res := rep.Results[0]
		if p.verbose && res.Details != "" {
			return rep, fmt.Errorf("%s: %s\n%s", term.Line(rep.Subject), term.Line(res.Evidence), indent(term.Block(res.Details)))
		}
		return rep, fmt.Errorf("%s: %s", term.Line(rep.Subject), term.Line(res.Evidence))
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
