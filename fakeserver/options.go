package fakeserver

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
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

// Tool names, as listed by tools/list and called by tools/call.
const (
	ToolEcho       = "echo"
	ToolBig        = "big"
	ToolSlow       = "slow"
	ToolSubprocess = "subprocess"
	ToolRemote     = "remote"
	ToolSearch     = "search"
)

// AllTools lists every tool a Server can offer, in the order tools/list
// returns them.
var AllTools = []string{ToolEcho, ToolBig, ToolSlow, ToolSubprocess, ToolRemote, ToolSearch}

// DefaultMaxFrame is the default limit on one message read from stdin, in
// bytes: 16 MiB, like the official Go SDK.
const DefaultMaxFrame = 16 << 20

// Option configures a Server. New applies Options in order; a later Option
// of the same kind replaces an earlier one (one fault of each kind).
type Option interface{ apply(*config) }

// optionFunc makes a function an Option.
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	era          Era
	tools        map[string]bool
	maxFrame     int
	concurrency  int
	reportFile   string
	subprocess   []string
	ignoreSIGTRM bool

	// faults
	banner          string
	stdoutLogAfter  int
	idleNotify      int64
	stdoutLogLine   string
	stderrNoise     int64
	ignoreCancel    bool
	unbounded       bool
	naive           bool
	invalidJSON     int
	rawNewline      int
	oversizedAfter  int
	oversizedSize   int
	noFinalNewline  int
	closeStdout     int
	exitAfterBytes  int64
	ignoreEOF       bool
	respondAfterCxl bool
	serverRequest   int
}

func defaultConfig() config {
	c := config{era: EraBoth, maxFrame: DefaultMaxFrame, tools: map[string]bool{}}
	for _, t := range AllTools {
		c.tools[t] = true
	}
	return c
}

// WithEra restricts the server to one protocol era, so that a host's
// negotiation can be tested; the default is EraBoth.
func WithEra(e Era) Option { return optionFunc(func(c *config) { c.era = e }) }

// WithTools offers exactly the named tools (see AllTools) instead of all of
// them; calling any other tool gets -32602.
func WithTools(names ...string) Option {
	return optionFunc(func(c *config) {
		c.tools = map[string]bool{}
		for _, n := range names {
			c.tools[n] = true
		}
	})
}

// WithMaxFrame sets the limit in bytes on one message read from stdin; a
// longer line is discarded unparsed and counted in Report.StdinOversized.
func WithMaxFrame(n int) Option { return optionFunc(func(c *config) { c.maxFrame = n }) }

// WithConcurrency lets at most n requests run at once; the others wait in
// state "not started" (a cancel then finds them there). 0 means no limit.
func WithConcurrency(n int) Option { return optionFunc(func(c *config) { c.concurrency = n }) }

// WithReportFile makes Serve write its Report as JSON to path each time it
// changes, by writing a temporary file beside it and renaming it, so a
// reader never sees a partial report.
func WithReportFile(path string) Option { return optionFunc(func(c *config) { c.reportFile = path }) }

// WithSubprocessCommand sets the command the subprocess tool runs instead of
// the default sh script; the command gets the byte counts in the environment
// variables named by EnvSubprocessStdout, EnvSubprocessStderr and
// EnvSubprocessHold and should honour them (see the subprocess tool).
func WithSubprocessCommand(name string, args ...string) Option {
	return optionFunc(func(c *config) { c.subprocess = append([]string{name}, args...) })
}

// WithIgnoreSIGTERM makes a server started by ServeStdio ignore SIGTERM, so
// that a host must escalate to SIGKILL; it has no effect in-process.
func WithIgnoreSIGTERM() Option { return optionFunc(func(c *config) { c.ignoreSIGTRM = true }) }

// WithBanner writes line and a newline on stdout before the first message is
// read: junk a strict host must survive.
func WithBanner(line string) Option { return optionFunc(func(c *config) { c.banner = line }) }

// WithStdoutLog writes line and a newline on stdout right after the nth
// message is read from stdin (before the response to it, if it is a request).
func WithStdoutLog(n int, line string) Option {
	return optionFunc(func(c *config) { c.stdoutLogAfter, c.stdoutLogLine = n, line })
}

// WithStderrNoise writes exactly n bytes of text lines to stderr before the
// first message is read, so a host that does not drain stderr stalls the
// server there.
func WithStderrNoise(n int64) Option { return optionFunc(func(c *config) { c.stderrNoise = n }) }

// WithIgnoreCancel records notifications/cancelled in the report but neither
// stops the work nor suppresses its response.
func WithIgnoreCancel() Option { return optionFunc(func(c *config) { c.ignoreCancel = true }) }

// WithUnboundedResults makes the search tool return every matching item in
// one result, without page size, cursor or truncation (the naive tool).
func WithUnboundedResults() Option { return optionFunc(func(c *config) { c.unbounded = true }) }

// WithNaiveLoop replaces the core with one goroutine that reads a message,
// handles it and writes its response before reading the next: it reads stdin
// only between writes, so it cannot see a cancel or a second request while a
// stdout write is blocked (the seed article's victim).
func WithNaiveLoop() Option { return optionFunc(func(c *config) { c.naive = true }) }

// WithInvalidJSON writes a line that is not valid JSON on stdout right after
// the nth message is read from stdin (before the response to it).
func WithInvalidJSON(n int) Option { return optionFunc(func(c *config) { c.invalidJSON = n }) }

// WithRawNewline puts a raw newline inside the response to the nth message,
// right after its leading `{"jsonrpc":"2.0",`, splitting the frame in two
// lines that are each invalid JSON.
func WithRawNewline(n int) Option { return optionFunc(func(c *config) { c.rawNewline = n }) }

// WithOversizedFrame writes a notifications/message notification of exactly
// size bytes (without its newline) on stdout right after the nth message is
// read from stdin (before the response to it).
func WithOversizedFrame(n, size int) Option {
	return optionFunc(func(c *config) { c.oversizedAfter, c.oversizedSize = n, size })
}

// WithNoFinalNewline writes the response to the nth message without its
// newline, then closes stdout and makes Serve return ErrExited.
func WithNoFinalNewline(n int) Option { return optionFunc(func(c *config) { c.noFinalNewline = n }) }

// WithCloseStdout closes stdout after the response to the nth message has
// been written (or right after the nth message is read, if it gets no
// response); the server goes on reading stdin until EOF, and later writes
// fail and are counted in Report.StdoutWriteErrors.
func WithCloseStdout(n int) Option { return optionFunc(func(c *config) { c.closeStdout = n }) }

// WithExitAfterBytes writes exactly n bytes to stdout in all, cutting the
// write that crosses the nth byte (usually in the middle of a response), then
// closes stdout and makes Serve return ErrExited.
func WithExitAfterBytes(n int64) Option { return optionFunc(func(c *config) { c.exitAfterBytes = n }) }

// WithIgnoreEOF keeps the server running after stdin reaches EOF, until
// Serve's context is cancelled.
func WithIgnoreEOF() Option { return optionFunc(func(c *config) { c.ignoreEOF = true }) }

// WithRespondAfterCancel stops cancelled work but still writes a response
// for it, as the Go SDKs do today: the result if the tool had finished, else
// an error -32603 "context canceled" (as mcp-go writes it).
func WithRespondAfterCancel() Option { return optionFunc(func(c *config) { c.respondAfterCxl = true }) }

// WithServerRequest writes a server-to-client ping request (id
// "fakeserver-1") on stdout right after the nth message is read from stdin,
// in either era; in 2026-07-28 that is a protocol violation.
func WithServerRequest(n int) Option { return optionFunc(func(c *config) { c.serverRequest = n }) }

// WithIdleNotifications makes the server, right after writing the response
// to the first tools/call, write at least n bytes of notifications/message
// frames (16 KiB each; the last shorter, but at least 104 bytes) that no
// request asked for, while the host
// has its answer and is idle; Report.IdleNotifyDone says when all are out.
func WithIdleNotifications(n int64) Option { return optionFunc(func(c *config) { c.idleNotify = n }) }

// ParseArgs builds Options from command-line flags, for `mcpstdio fake` and
// for ServeStdio. Each flag sets the
// Option of the same meaning; -h lists them. The error wraps flag.ErrHelp
// for -h, and names the bad flag otherwise.
func ParseArgs(args []string) ([]Option, error) {
	fs := flag.NewFlagSet("fakeserver", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var (
		era, tools, report, subprocess, banner, logLine string
		maxFrame, concurrency, logAfter, invalidJSON    int
		rawNewline, overAfter, overSize, noNewline      int
		closeStdout, serverRequest                      int
		noise, exitAfter, idleNotify                    int64
		ignoreTerm, ignoreCancel, unbounded, naive      bool
		ignoreEOF, respondAfter                         bool
	)
	fs.StringVar(&era, "era", string(EraBoth), "protocol era: both, modern or legacy (WithEra)")
	fs.StringVar(&tools, "tools", strings.Join(AllTools, ","), "comma-separated tools to offer (WithTools)")
	fs.IntVar(&maxFrame, "max-frame", DefaultMaxFrame, "limit in bytes on one stdin message (WithMaxFrame)")
	fs.IntVar(&concurrency, "concurrency", 0, "requests running at once, 0 for no limit (WithConcurrency)")
	fs.StringVar(&report, "report", "", "write the report as JSON to this file (WithReportFile)")
	fs.StringVar(&subprocess, "subprocess-command", "", `command of the subprocess tool as a JSON array, e.g. ["sh","-c","..."] (WithSubprocessCommand)`)
	fs.BoolVar(&ignoreTerm, "ignore-sigterm", false, "ignore SIGTERM (WithIgnoreSIGTERM)")
	fs.StringVar(&banner, "banner", "", "line written on stdout before the first message (WithBanner)")
	fs.IntVar(&logAfter, "stdout-log-after", 0, "write -stdout-log-line on stdout after the nth message (WithStdoutLog)")
	fs.StringVar(&logLine, "stdout-log-line", "fakeserver: a log line on stdout", "line for -stdout-log-after")
	fs.Int64Var(&idleNotify, "idle-notify-bytes", 0, "bytes of notifications written after the first tools/call response (WithIdleNotifications)")
	fs.Int64Var(&noise, "stderr-noise", 0, "bytes of noise on stderr before the first message (WithStderrNoise)")
	fs.BoolVar(&ignoreCancel, "ignore-cancel", false, "ignore notifications/cancelled (WithIgnoreCancel)")
	fs.BoolVar(&unbounded, "unbounded", false, "search returns everything at once (WithUnboundedResults)")
	fs.BoolVar(&naive, "naive", false, "single-goroutine loop reading stdin only between writes (WithNaiveLoop)")
	fs.IntVar(&invalidJSON, "invalid-json-after", 0, "invalid JSON line after the nth message (WithInvalidJSON)")
	fs.IntVar(&rawNewline, "raw-newline", 0, "raw newline inside the response to the nth message (WithRawNewline)")
	fs.IntVar(&overAfter, "oversized-after", 0, "oversized frame after the nth message (WithOversizedFrame)")
	fs.IntVar(&overSize, "oversized-size", 0, "size in bytes of the -oversized-after frame")
	fs.IntVar(&noNewline, "no-final-newline", 0, "response to the nth message without newline, then exit (WithNoFinalNewline)")
	fs.IntVar(&closeStdout, "close-stdout-after", 0, "close stdout after the response to the nth message (WithCloseStdout)")
	fs.Int64Var(&exitAfter, "exit-after-bytes", 0, "exit after exactly n bytes of stdout (WithExitAfterBytes)")
	fs.BoolVar(&ignoreEOF, "ignore-eof", false, "keep running after stdin EOF (WithIgnoreEOF)")
	fs.BoolVar(&respondAfter, "respond-after-cancel", false, "respond to cancelled requests (WithRespondAfterCancel)")
	fs.IntVar(&serverRequest, "server-request-after", 0, "server-to-client ping after the nth message (WithServerRequest)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return nil, fmt.Errorf("%w\nflags of the fake server:\n%s", flag.ErrHelp, b.String())
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
		if !knownTool(t) {
			return nil, fmt.Errorf("fakeserver: -tools: unknown tool %q (known: %s)", t, strings.Join(AllTools, ", "))
		}
		toolList = append(toolList, t)
	}
	opts := []Option{WithEra(Era(era)), WithTools(toolList...), WithMaxFrame(maxFrame), WithConcurrency(concurrency)}
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
	add := func(cond bool, o Option) {
		if cond {
			opts = append(opts, o)
		}
	}
	add(ignoreTerm, WithIgnoreSIGTERM())
	add(banner != "", WithBanner(banner))
	add(logAfter > 0, WithStdoutLog(logAfter, logLine))
	add(noise > 0, WithStderrNoise(noise))
	add(idleNotify > 0, WithIdleNotifications(idleNotify))
	add(ignoreCancel, WithIgnoreCancel())
	add(unbounded, WithUnboundedResults())
	add(naive, WithNaiveLoop())
	add(invalidJSON > 0, WithInvalidJSON(invalidJSON))
	add(rawNewline > 0, WithRawNewline(rawNewline))
	if overAfter > 0 {
		if overSize <= 0 {
			return nil, fmt.Errorf("fakeserver: -oversized-after %d needs -oversized-size", overAfter)
		}
		opts = append(opts, WithOversizedFrame(overAfter, overSize))
	}
	add(noNewline > 0, WithNoFinalNewline(noNewline))
	add(closeStdout > 0, WithCloseStdout(closeStdout))
	add(exitAfter > 0, WithExitAfterBytes(exitAfter))
	add(ignoreEOF, WithIgnoreEOF())
	add(respondAfter, WithRespondAfterCancel())
	add(serverRequest > 0, WithServerRequest(serverRequest))
	return opts, nil
}

func knownTool(name string) bool {
	for _, t := range AllTools {
		if t == name {
			return true
		}
	}
	return false
}
