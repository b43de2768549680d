// Command mcpstdio checks stdio MCP servers for back-pressure and
// cancellation bugs from the shell, and serves a fake MCP server that
// misbehaves on demand, for testing hosts written in any language.
//
// Usage:
//
//	mcpstdio probe [flags] -- <server command...>
//	mcpstdio probe [flags] -config FILE [NAME...]
//	mcpstdio probe [flags]
//	mcpstdio hostprobe [flags] -- <host command...>
//	mcpstdio fake [fake flags]
//	mcpstdio proxy [flags] -- <server command...>
//	mcpstdio status [-json] [-all] [-dir DIR] [-http [ADDR]]
//	mcpstdio replay [flags] -record FILE -- <server command...>
//	mcpstdio replay -serve [flags] -record FILE
//	mcpstdio show [-json] [-html FILE] RECORD
//	mcpstdio wrap [-dir DIR] FILE [NAME...]
//	mcpstdio unwrap FILE [NAME...]
//	mcpstdio version
//	mcpstdio help [COMMAND]
//
// probe runs the server release criteria (assertions.CheckServer) against
// a server command, the stdio servers of an agent's config file, or the
// built-in fake, correct and naive;
// hostprobe runs the host criteria (assertions.CheckHostCommand) against a
// host command in any language; fake serves the fakeserver package's server
// on stdio; proxy runs a server with its stdio forwarded exactly and records
// what passes; status prints what each running proxy sees now; replay plays
// a recorded session again; show summarizes a record; wrap and unwrap put
// the proxy in front of the servers of an agent's config file and take it
// out again; version says which build this is. "mcpstdio help COMMAND" describes each command, its flags
// and its exit status (2 is always a usage error).
//
// The command mcpstdio-proxy is the proxy alone, the same as "mcpstdio
// proxy" but in a binary that links nothing else, for less memory in the
// process that stands between a host and its server.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
	"github.com/mcpstdio/mcpstdio/cmd/internal/watchdog"
)

func main() {
	// Started by probe or hostprobe as their watchdog: that and nothing else.
	watchdog.Serve()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage:
  mcpstdio probe [flags] -- <server command...>   run the release criteria against a stdio MCP server
  mcpstdio probe [flags] -config FILE [NAME...]   run them against the stdio servers of an agent's config
  mcpstdio probe [flags]                          run them against the built-in fake, good and naive
  mcpstdio hostprobe [flags] -- <host command...> run the host criteria against an MCP host (any language)
  mcpstdio fake [fake flags]                      serve the fake MCP server on stdin and stdout
  mcpstdio proxy [flags] -- <server command...>   run a server through a recording stdio proxy
  mcpstdio status [-json] [-all] [-dir DIR]       show what the running proxies see now
  mcpstdio status -http [ADDR]                    serve it as a live page on loopback
  mcpstdio replay [flags] -record FILE -- <server command...>
                                                  play a recorded session's host side against a server
  mcpstdio replay -serve [flags] -record FILE     play its server side on stdio, for a host
  mcpstdio show [-json] [-html FILE] RECORD        summarize a record, or write it as an HTML report
  mcpstdio wrap [-dir DIR] FILE [NAME...]         put the proxy in front of the servers of an agent's config
  mcpstdio unwrap FILE [NAME...]                  take it out again
  mcpstdio version                                print the version, commit and toolchain
  mcpstdio help [probe|hostprobe|fake|...]        show this help or a command's flags
`

// commands are the commands "mcpstdio help COMMAND" describes.
var commands = []string{"probe", "hostprobe", "fake", "proxy", "status", "replay", "show", "wrap", "unwrap", "version"}

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
	case "hostprobe":
		return runHostProbe(ctx, args[1:], stdout, stderr)
	case "fake":
		return runFake(ctx, args[1:], stdout, stderr)
	case "proxy":
		return proxycmd.Run(ctx, "mcpstdio proxy", args[1:], os.Stdin, stdout, stderr)
	case "status":
		return runStatus(ctx, args[1:], stdout, stderr)
	case "replay":
		return runReplay(ctx, args[1:], os.Stdin, stdout, stderr)
	case "show":
		return runShow(args[1:], stdout, stderr)
	case "wrap":
		return runWrap(args[1:], stdout, stderr)
	case "unwrap":
		return runUnwrap(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		return runVersion(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) == 2 && slices.Contains(commands, args[1]) {
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
