// Command gosdkclient is a host on the official Go SDK's client
// (mcp.CommandTransport) for mcpstdio hostprobe: it starts the server it is
// given, calls one tool, prints the result's size and exits: 0 with a
// result, 1 with an error. It is built against each pinned go-sdk release
// (../pins) by the history test.
//
//	gosdkclient [-timeout 0] [-args-bytes 0] [-close-after 0] -- SERVER ARGS...
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	timeout := flag.Duration("timeout", 0, "bound of the call (0: none)")
	argsBytes := flag.Int("args-bytes", 0, "bytes of padding in the call's arguments")
	closeAfter := flag.Duration("close-after", 0, "pause between the call's end and Close, as a host that goes on with its work")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gosdkclient [-timeout D] [-args-bytes N] [-close-after D] -- SERVER ARGS...")
		os.Exit(2)
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gosdkclient", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.CommandTransport{Command: exec.Command(flag.Arg(0), flag.Args()[1:]...)}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosdkclient: connect:", err)
		os.Exit(1)
	}
	code := run(cs, *timeout, *argsBytes)
	time.Sleep(*closeAfter)
	begin := time.Now()
	if err := cs.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "gosdkclient: close:", err)
	}
	fmt.Fprintf(os.Stderr, "gosdkclient: Close returned after %v\n", time.Since(begin).Round(time.Millisecond))
	os.Exit(code)
}

func run(cs *mcp.ClientSession, timeout time.Duration, argsBytes int) int {
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	args := map[string]any{"text": "hello from gosdkclient"}
	if argsBytes > 0 {
		args["pad"] = strings.Repeat("x", argsBytes)
	}
	begin := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
	if err != nil {
		fmt.Fprintf(os.Stderr, "gosdkclient: tools/call: error after %v: %v\n", time.Since(begin).Round(time.Millisecond), err)
		return 1
	}
	if res.IsError {
		fmt.Fprintln(os.Stderr, "gosdkclient: tools/call: the tool reported an error")
		return 1
	}
	fmt.Printf("tools/call echo: %d content blocks in %v\n", len(res.Content), time.Since(begin).Round(time.Millisecond))
	return 0
}
