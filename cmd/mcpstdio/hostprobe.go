package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/child"
)

const hostProbeUsage = `usage: mcpstdio hostprobe [flags] -- <host command...>

Runs the host criteria against an MCP host given as a command, in any
language: once per criterion, against a fresh fake server (mcpstdio fake)
with the faults the criterion needs, and judges it by what the fake saw
(requests, cancels and their timing, when it stopped reading, restarts)
and by the host's exit status, time and output. The host must start the
server it is given and finish the handshake; it may call one tool (any
tool: the fake answers it as the criterion needs), and if its first run
calls none, the criteria about a call are skipped. It is killed, with its
process group, when a criterion's
bound passes. If hostprobe itself is killed (SIGKILL: a CI timeout, the
OOM killer), on Linux the host and everything it started die too, even
under a wrapper that ignores SIGTERM or after a setsid: a watchdog process
(mcpstdio-watchdog) kills them. Not ended then: a process that cleared its
environment and left the host's tree before hostprobe's last look (five
a second). What it leaves running (a
server it orphaned, a setsid daemon holding its output, and on Linux,
where hostprobe is a child subreaper, anything it detached from itself)
is named in the evidence and ended. One line
per criterion and a summary are printed, as by probe (on a terminal, a
status line on stderr shows the criterion running).

In the host command, a word that is exactly {server} becomes the fake's
command line as separate words, {server_json} in any word becomes it as a
JSON array, {server_command_json} its first word as a JSON string and
{server_args_json} the others as a JSON array. -config TEMPLATE=PATH writes
PATH from TEMPLATE with the same substitutions before each run, for hosts
that read their servers from a config file:

  mcpstdio hostprobe -- npx @modelcontextprotocol/inspector --cli {server} --method tools/call --tool-name echo
  mcpstdio hostprobe -config mcp.json.tmpl=mcp.json -- myhost --config mcp.json ask "call a tool"

Bounds: host-timeout, progress-forever, late-after-cancel, stdin-not-read,
close-bounded, shutdown-ladder and handshake-timeout wait at most -host-cap plus -within (for the host to start)
for the host's own timeout (shutdown-ladder: -host-cap from the first step
of the ladder the fake sees, once it sees one), then at most -within for
the fake's last report; the other criteria 3×-within in all. The first run gets
-start-timeout. A host still running at its bound
is killed with its process group.

Exit status: as probe's: 0 no criterion failed (with -expect, every verdict
is the expected one; with -baseline, nothing got worse); 1 otherwise; 2
usage error.

flags:
`

// configFlag is the -config flag: TEMPLATE=PATH, more than once.
type configFlag []assertions.ConfigFile

func (f *configFlag) String() string {
	var s []string
	for _, c := range *f {
		s = append(s, c.Template+"="+c.Path)
	}
	return strings.Join(s, ",")
}

func (f *configFlag) Set(s string) error {
	tmpl, path, ok := strings.Cut(s, "=")
	if !ok || tmpl == "" || path == "" {
		return fmt.Errorf("%q: want TEMPLATE=PATH", s)
	}
	if _, err := os.Stat(tmpl); err != nil {
		return fmt.Errorf("template: %v", err)
	}
	*f = append(*f, assertions.ConfigFile{Template: tmpl, Path: path})
	return nil
}

// hostProbeFlags are hostprobe's flags; those it shares with probe mean
// the same.
type hostProbeFlags struct {
	maxFrame, toolsList, hugeField, blocks int
	stderrNoise                            int64
	within, hostCap, start                 time.Duration
	expectOutput                           string
	configs                                configFlag
	reportFlags
}

func (f *hostProbeFlags) register(fs *flag.FlagSet) {
	f.expect.names = assertions.HostCriterionNames()
	fs.IntVar(&f.maxFrame, "max-frame", 0, "the host's transport limit: most `bytes` in one message from the server (0: unknown, skips under-limit and over-limit)")
	fs.DurationVar(&f.within, "within", 0, "bound of each step of a criterion (0: 10s)")
	fs.DurationVar(&f.start, "start-timeout", 0, "bound of the host's first run, before the criteria, which must finish the handshake (0: 30s)")
	fs.DurationVar(&f.hostCap, "host-cap", 0, "how long the host's own timeout is waited for; a host still waiting fails (0: 2m)")
	fs.IntVar(&f.toolsList, "tools-list-bytes", 0, "size in `bytes` of large-tools-list's tools/list (0: 300000)")
	fs.IntVar(&f.hugeField, "huge-field", 0, "size in `bytes` of huge-field's response (0: 8 MiB, less under -max-frame)")
	fs.IntVar(&f.blocks, "blocks", 0, "`number` of content blocks of many-blocks (0: 10000, fewer under -max-frame)")
	fs.Int64Var(&f.stderrNoise, "stderr-noise", 0, "`bytes` the fake writes to stderr in stderr-noise (0: 64 MiB)")
	fs.StringVar(&f.expectOutput, "expect-output", "", "`regexp` the host's output must match in a run that worked: exit 0 without it is a failure (large-tools-list passes on it unless the host calls a filler tool)")
	fs.Var(&f.configs, "config", "`TEMPLATE=PATH`: write PATH from TEMPLATE before each run (may be repeated)")
	f.reportFlags.register(fs, "host", "")
}

func (f *hostProbeFlags) config() (assertions.HostConfig, *regexp.Regexp, error) {
	cfg := assertions.HostConfig{MaxFrame: f.maxFrame, Within: f.within, Cap: f.hostCap, StartTimeout: f.start, ToolsListBytes: f.toolsList,
		HugeField: f.hugeField, Blocks: f.blocks, StderrNoise: f.stderrNoise, Expect: f.expect.m}
	if f.maxFrame < 0 || f.toolsList < 0 || f.hugeField < 0 || f.blocks < 0 || f.stderrNoise < 0 || f.within < 0 || f.hostCap < 0 || f.start < 0 {
		return cfg, nil, errors.New("-max-frame, -tools-list-bytes, -huge-field, -blocks, -stderr-noise, -within, -host-cap and -start-timeout must not be negative")
	}
	var err error
	if cfg.Run, err = compileRun(f.run, assertions.HostCriterionNames()); err != nil {
		return cfg, nil, err
	}
	var out *regexp.Regexp
	if f.expectOutput != "" {
		if out, err = regexp.Compile(f.expectOutput); err != nil {
			return cfg, nil, fmt.Errorf("-expect-output: %v", err)
		}
	}
	return cfg, out, nil
}

func runHostProbe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio hostprobe", flag.ContinueOnError)
	var f hostProbeFlags
	if ok, code := parseFlags(fs, &f, args, hostProbeUsage, stdout, stderr); !ok {
		return code
	}
	usageErr := func(err error) int { return usageError(stderr, fs, err) }
	if fs.NArg() == 0 {
		return usageErr(errors.New(`no host command (give it after "--")`))
	}
	cfg, expectOutput, err := f.config()
	if err != nil {
		return usageErr(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return usageErr(fmt.Errorf("finding this program, to run its fake server: %v", err))
	}
	base, junit, err := f.open()
	if err != nil {
		return usageErr(err)
	}
	if junit != nil {
		defer junit.Close()
	}
	// What a host detaches from itself (setsid, a double fork) is adopted
	// by this process, where each criterion finds it and ends it (Linux).
	_ = child.BecomeSubreaper()
	argv := fs.Args()
	h := assertions.HostCommand{Argv: argv, Configs: f.configs, Fake: []string{exe, "fake"}, ExpectOutput: expectOutput}
	return withOutput(ctx, "mcpstdio hostprobe", stdout, stderr, f.verbose, f.json, junit, func(ctx context.Context, out *output) int {
		rep, err := probeWith(ctx, argv, argv, assertions.HostCriterionNames(), cfg.Run, out.p, func(ctx context.Context, progress func(assertions.Result)) *assertions.Report {
			return assertions.CheckHostCommand(ctx, h, cfg, progress)
		})
		return exitStatus("mcpstdio hostprobe", rep, err, base, out, stderr)
	})
}
