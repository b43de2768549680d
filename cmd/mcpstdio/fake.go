package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

// runFake serves the fake server on this process's stdio. Its flags are
// fakeserver.ParseArgs's; they are checked before serving so that a usage
// error is told apart from an error while serving.
func runFake(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if _, err := fakeserver.ParseArgs(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// The error's text after its first line lists the flags.
			_, flags, _ := strings.Cut(err.Error(), "\n")
			fmt.Fprintf(stdout, "usage: mcpstdio fake [flags]\n\nServes a fake MCP server on stdin and stdout until stdin ends or SIGTERM.\n\n%s\nExit status: 0 when it ended cleanly, 1 when it ended on an error, 2 for a usage error.\n", flags)
			return 0
		}
		fmt.Fprintf(stderr, "mcpstdio fake: %s (see mcpstdio fake -h)\n", strings.TrimPrefix(err.Error(), "fakeserver: "))
		return 2
	}
	if err := fakeserver.ServeStdio(ctx, args); err != nil {
		fmt.Fprintf(stderr, "mcpstdio fake: %v\n", err)
		return 1
	}
	return 0
}
