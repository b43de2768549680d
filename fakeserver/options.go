package fakeserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Era selects which protocol revisions a Server speaks.
type Era string

const (
	// EraBoth serves 2026-07-28 requests (with _meta) and the legacy
	// initialize handshake side by side. It is the default.
	EraBoth Era = "both"
	// EraModern serves only 2026-07-28: initialize and requests without
	// _meta get an UnsupportedProtocolVersionError (-32022).
	EraModern Era = "modern"
	// EraLegacy serves only 2025-11-25 and 2025-06-18: _meta is ignored and
	// server/discover is an unknown method (-32601), as on a server built
	// before 2026-07-28.
	EraLegacy Era = "legacy"
)

// Option configures a Server: a With function's result, or Faults. New
// applies Options in order; a later Option of the same kind replaces an
// earlier one.
type Option interface{ apply(*config) }

// optionFunc makes a function an Option.
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	era         Era
	tools       map[string]bool
	maxFrame    int
	concurrency int
	reportFile  string
	subprocess  []string
	faults      Faults
}

// defaultMaxFrame is the default limit on one message read from stdin, in
// bytes: 16 MiB, like the official Go SDK.
const defaultMaxFrame = 16 << 20

func defaultConfig() config {
	c := config{era: EraBoth, maxFrame: defaultMaxFrame, tools: map[string]bool{}}
	for _, t := range toolTable {
		c.tools[t.Name] = true
	}
	return c
}

// WithEra restricts the server to one protocol era, so that a host's
// negotiation can be tested; the default is EraBoth.
func WithEra(e Era) Option { return optionFunc(func(c *config) { c.era = e }) }

// WithTools offers exactly the named tools (see Tools) instead of all of
// them; calling any other tool gets -32602.
func WithTools(names ...string) Option {
	return optionFunc(func(c *config) {
		c.tools = map[string]bool{}
		for _, n := range names {
			c.tools[n] = true
		}
	})
}

// WithStdinLimit sets the limit in bytes on one message the server reads
// from stdin (default 16 MiB, like the official Go SDK); a longer line is
// discarded unparsed and counted in Report.StdinOversized. (mcptest's
// WithMaxFrame is the host's limit on a message from the server.)
func WithStdinLimit(n int) Option { return optionFunc(func(c *config) { c.maxFrame = n }) }

// WithConcurrency lets at most n requests run at once; the others wait in
// state "not started" (a cancel then finds them there). 0 means no limit.
func WithConcurrency(n int) Option { return optionFunc(func(c *config) { c.concurrency = n }) }

// WithReportFile makes Serve write its Report as JSON to path each time it
// changes, by writing a temporary file beside it and renaming it, so a
// reader never sees a partial report. A symbolic link is followed (the
// file it names is replaced, the link stays). A path that is not a
// regular file (a device, a FIFO, /dev/stderr) is never replaced: it gets
// the report written into it once, when Serve ends.
func WithReportFile(path string) Option { return optionFunc(func(c *config) { c.reportFile = path }) }

// WithSubprocessCommand sets the command the subprocess tool runs instead of
// the default sh script. The command gets the byte counts in the
// environment variables named by EnvSubprocessStdout, EnvSubprocessStderr
// and EnvSubprocessHold and must honour them: the numbers of bytes it
// writes to stdout and to stderr, and "1" when it must then keep running
// until it is killed (it may block reading its stdin, which stays open).
func WithSubprocessCommand(name string, args ...string) Option {
	return optionFunc(func(c *config) { c.subprocess = append([]string{name}, args...) })
}

// ParseArgs builds Options from command-line flags, for `mcpstdio fake` and
// ServeStdio: a flag for each With function and one for each field of
// Faults; -h lists them. The error wraps flag.ErrHelp for -h, and names the
// bad flag otherwise.
func ParseArgs(args []string) ([]Option, error) {
	fs := flag.NewFlagSet("fakeserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		era, tools, report, subprocess string
		maxFrame, concurrency          int
	)
	fs.StringVar(&era, "era", string(EraBoth), "protocol era: both, modern or legacy (WithEra)")
	fs.StringVar(&tools, "tools", strings.Join(Tools(), ","), "comma-separated tools to offer (WithTools)")
	fs.IntVar(&maxFrame, "max-frame", defaultMaxFrame, "limit in bytes on one stdin message (WithStdinLimit)")
	fs.IntVar(&concurrency, "concurrency", 0, "requests running at once, 0 for no limit (WithConcurrency)")
	fs.StringVar(&report, "report", "", "write the report as JSON to this file, rewritten as it changes; a device, FIFO or /dev/stderr gets it once, at the end (WithReportFile)")
	fs.StringVar(&subprocess, "subprocess-command", "", `command of the subprocess tool as a JSON array, e.g. ["sh","-c","..."] (WithSubprocessCommand)`)
	faults := Faults{StdoutLogLine: defaultStdoutLogLine}
	faults.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return nil, fmt.Errorf("%w\nflags of the fake server:\n%s\ntools (tools/call NAME with these arguments, a JSON object; the flag -call-args takes the same):\n%s"+
				"  for example, the params of a 15 MiB result: {\"name\":\"big\",\"arguments\":{\"bytes\":15728640}}\n", flag.ErrHelp, b.String(), toolsHelp())
		}
		return nil, fmt.Errorf("fakeserver: %w", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("fakeserver: unexpected arguments %q", fs.Args())
	}
	switch Era(era) {
	case EraBoth, EraModern, EraLegacy:
	default:
		return nil, fmt.Errorf("fakeserver: -era %q: want both, modern or legacy", era)
	}
	var toolList []string
	for t := range strings.SplitSeq(tools, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if !slices.Contains(Tools(), t) {
			return nil, fmt.Errorf("fakeserver: -tools: unknown tool %q (known: %s)", t, strings.Join(Tools(), ", "))
		}
		toolList = append(toolList, t)
	}
	if err := faults.check(); err != nil {
		return nil, fmt.Errorf("fakeserver: %w", err)
	}
	opts := []Option{WithEra(Era(era)), WithTools(toolList...), WithStdinLimit(maxFrame), WithConcurrency(concurrency), faults}
	if report != "" {
		opts = append(opts, WithReportFile(report))
	}
	if subprocess != "" {
		var argv []string
		if err := json.Unmarshal([]byte(subprocess), &argv); err != nil || len(argv) == 0 {
			return nil, fmt.Errorf("fakeserver: -subprocess-command %q: want a non-empty JSON array of strings", subprocess)
		}
		opts = append(opts, WithSubprocessCommand(argv[0], argv[1:]...))
	}
	return opts, nil
}
