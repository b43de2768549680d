// Command mcpstdio checks stdio MCP servers for back-pressure and
// cancellation bugs from the shell, and serves a fake MCP server that
// misbehaves on demand, for testing hosts written in any language.
//
// Usage:
//
//	mcpstdio probe [flags] -- <server command...>
//	mcpstdio probe [flags]
//	mcpstdio fake [fake flags]
//	mcpstdio proxy [flags] -- <server command...>
//	mcpstdio status [-json] [-all] [-dir DIR] [-http [ADDR]]
//	mcpstdio replay [flags] -record FILE -- <server command...>
//	mcpstdio replay -serve [flags] -record FILE
//	mcpstdio show [-json] [-html FILE] RECORD
//	mcpstdio help [probe|fake|proxy|status|replay|show]
//
// probe runs the server release criteria (assertions.CheckServer) against a
// server started from the command after "--", each criterion with a fresh
// server process. It prints one line per criterion as it finishes (verdict,
// name, duration, evidence) and a summary, with a live status line on
// stderr when that is a terminal; -v adds each criterion's rule and
// diagnosis; -json prints the report (an assertions.Report) as one line of
// JSON on stdout instead (progress goes to stderr); -junit writes it as
// JUnit XML; -baseline compares it with an earlier -json report; -expect
// names known verdicts. The criteria that need a tool call are skipped
// unless a flag names it: -large (a response much larger than the pipe),
// -slow (a call that runs for a while and honours cancellation) and -bounded
// (a call that could return a lot); -cheap replaces the "second request"
// (default ping or server/discover) and the requests of the
// reads-while-blocked flood. Each takes a tool name, optionally followed by
// a space and its arguments as a JSON object:
//
//	mcpstdio probe -large 'read_file {"path":"/var/log/big.log"}' -slow sleep -- ./myserver --stdio
//
// Before the criteria, probe starts the server once and negotiates; a
// server that does not start or does not speak MCP ends the probe there
// with one error line.
//
// With no server command (and no "--"), probe runs the criteria against the
// built-in fake server twice, as child processes of this command: once
// correct, once with its naive single-goroutine loop (-naive), and says
// whether each behaved as expected. It takes seconds and shows what the
// criteria catch:
//
//	go run ./cmd/mcpstdio probe
//
// fake serves the fakeserver package's server on this process's stdin and
// stdout; its flags (see "mcpstdio fake -h") pick the tools and the faults
// and name a file for its JSON report of what the host did.
//
// proxy runs a server command with its stdin, stdout and stderr forwarded
// exactly to and from its own, for use in a host's MCP configuration in
// place of the server command, and records what passes in a private NDJSON
// file in the per-user state directory (see the proxy package). It exits
// with the server's status. status prints what each running proxy sees
// now: pending requests, blocked directions and verdicts.
//
// show summarizes a record of proxy in the terminal (header, verdicts,
// metrics, pending at the end, lost detail, a timeline with long runs
// folded); -json prints it for scripts; -html writes one self-contained
// HTML report with a timeline per direction. status -http serves the
// running proxies as a live page on a loopback address, to requests that
// carry the random token it prints.
//
// replay plays again a session that proxy recorded (see the replay
// package): with a server command, the host's side against that server,
// printing where it departs from the recorded one (exit status 1 if it
// does); with -serve, the server's side on this process's stdio, for a
// host under test; with -save, the record redacted (-redact) to a file.
//
// Exit status: 0 when no criterion failed (warnings and skips allowed;
// with -expect, every verdict is the expected one; with -baseline, nothing
// got worse) or, without a server command, when both fakes behaved as
// expected; 1 when a criterion failed, something got worse than the
// baseline, the server could not be probed, or the fake server ended on an
// error; 2 for a usage error.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage:
  mcpstdio probe [flags] -- <server command...>   run the release criteria against a stdio MCP server
  mcpstdio probe [flags]                          run them against the built-in fake, good and naive
  mcpstdio fake [fake flags]                      serve the fake MCP server on stdin and stdout
  mcpstdio proxy [flags] -- <server command...>   run a server through a recording stdio proxy
  mcpstdio status [-json] [-all] [-dir DIR]       show what the running proxies see now
  mcpstdio status -http [ADDR]                    serve it as a live page on loopback
  mcpstdio replay [flags] -record FILE -- <server command...>
                                                  play a recorded session's host side against a server
  mcpstdio replay -serve [flags] -record FILE     play its server side on stdio, for a host
  mcpstdio show [-json] [-html FILE] RECORD        summarize a record, or write it as an HTML report
  mcpstdio help [probe|fake|proxy|status|replay|show]
                                                  show this help or a command's flags
`

// run runs the command line args (without the program name) and returns the
// exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "probe":
		return runProbe(ctx, args[1:], stdout, stderr)
	case "fake":
		return runFake(ctx, args[1:], stdout, stderr)
	case "proxy":
		return runProxy(ctx, args[1:], os.Stdin, stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "replay":
		return runReplay(ctx, args[1:], os.Stdin, stdout, stderr)
	case "show":
		return runShow(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && (args[1] == "probe" || args[1] == "fake" || args[1] == "proxy" || args[1] == "status" || args[1] == "replay" || args[1] == "show") {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		if len(args) > 1 {
			fmt.Fprintf(stderr, "mcpstdio help: unknown command %q\n%s", args[1], usageText)
			return 2
		}
		fmt.Fprint(stdout, usageText)
		return 0
	default:
		fmt.Fprintf(stderr, "mcpstdio: unknown command %q\n%s", args[0], usageText)
		return 2
	}
}
