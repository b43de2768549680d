// Command mcpgoclient is a host on mcp-go's stdio client for mcpstdio
// hostprobe: it starts the server it is given (NewStdioMCPClient, which
// pipes the server's stderr), initializes, calls one tool, prints the
// result's size and exits: 0 with a result, 1 with an error. It is built
// against each pinned mcp-go release (../pins) by the history test.
//
//	mcpgoclient [-timeout 0] -- SERVER ARGS...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	timeout := flag.Duration("timeout", 0, "bound of the call (0: none)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: mcpgoclient [-timeout D] -- SERVER ARGS...")
		os.Exit(2)
	}
	c, err := client.NewStdioMCPClient(flag.Arg(0), os.Environ(), flag.Args()[1:]...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mcpgoclient: start:", err)
		os.Exit(1)
	}
	os.Exit(run(c, *timeout))
}

func run(c *client.Client, timeout time.Duration) int {
	defer c.Close()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: mcp.LATEST_PROTOCOL_VERSION,
		ClientInfo:      mcp.Implementation{Name: "mcpgoclient", Version: "0"},
	}}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgoclient: initialize:", err)
		return 1
	}
	begin := time.Now()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello from mcpgoclient"}}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcpgoclient: tools/call: error after %v: %v\n", time.Since(begin).Round(time.Millisecond), err)
		return 1
	}
	if res.IsError {
		fmt.Fprintln(os.Stderr, "mcpgoclient: tools/call: the tool reported an error")
		return 1
	}
	fmt.Printf("tools/call echo: %d content blocks in %v\n", len(res.Content), time.Since(begin).Round(time.Millisecond))
	return 0
}
