// Command gohost is an MCP host on the official Go SDK or on mcp-go, as a
// command-line tool, for mcpstdio hostprobe: it starts the server it is
// given, calls one tool (or, with -call-last, lists the tools and calls the
// last one), prints the result and exits: 0 with a result, 1 with an error.
//
//	gohost -sdk go-sdk|mcp-go [-tool echo] [-timeout 0] [-call-last] -- SERVER ARGS...
//
// -timeout is the context the call is made with (0: none), the way an
// application bounds a call with either SDK: neither has a timeout of its
// own.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	sdk := flag.String("sdk", "go-sdk", "go-sdk or mcp-go")
	tool := flag.String("tool", "echo", "the tool to call")
	timeout := flag.Duration("timeout", 0, "bound of the call (0: none)")
	callLast := flag.Bool("call-last", false, "list the tools and call the last one")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: gohost -sdk go-sdk|mcp-go [-tool NAME] [-timeout D] [-call-last] -- SERVER ARGS...")
		os.Exit(2)
	}
	var h host
	var err error
	ctx := context.Background()
	switch *sdk {
	case "go-sdk":
		h, err = startGoSDK(ctx, flag.Args())
	case "mcp-go":
		h, err = startMCPGo(ctx, flag.Args())
	default:
		err = fmt.Errorf("unknown -sdk %q", *sdk)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gohost: connect:", err)
		os.Exit(1)
	}
	code := run(ctx, h, *tool, *timeout, *callLast)
	if err := h.close(); err != nil {
		fmt.Fprintln(os.Stderr, "gohost: close:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, h host, tool string, timeout time.Duration, callLast bool) int {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	if callLast {
		names, err := h.list(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gohost: tools/list:", err)
			return 1
		}
		if len(names) == 0 {
			fmt.Fprintln(os.Stderr, "gohost: tools/list: no tools")
			return 1
		}
		fmt.Printf("listed %d tools, the last %s\n", len(names), names[len(names)-1])
		tool = names[len(names)-1]
	}
	begin := time.Now()
	res, err := h.call(ctx, tool, map[string]any{"text": "hello from gohost"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "gohost: tools/call %s: error after %v: %v\n", tool, time.Since(begin).Round(time.Millisecond), err)
		return 1
	}
	fmt.Printf("tools/call %s: %d bytes of result in %v\n", tool, len(res), time.Since(begin).Round(time.Millisecond))
	return 0
}

// result is a tools/call result as JSON, or the error it reports.
func result(res any, isError bool) ([]byte, error) {
	if isError {
		return nil, errors.New("the tool reported an error")
	}
	return json.Marshal(res)
}

type host struct {
	call  func(ctx context.Context, name string, args map[string]any) ([]byte, error)
	list  func(ctx context.Context) ([]string, error)
	close func() error
}

func startGoSDK(ctx context.Context, argv []string) (host, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "gohost", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		return host{}, err
	}
	return host{
		call: func(ctx context.Context, name string, args map[string]any) ([]byte, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				return nil, err
			}
			return result(res, res.IsError)
		},
		list: func(ctx context.Context) ([]string, error) {
			var names []string
			for t, err := range cs.Tools(ctx, nil) {
				if err != nil {
					return names, err
				}
				names = append(names, t.Name)
			}
			return names, nil
		},
		close: cs.Close,
	}, nil
}

func startMCPGo(ctx context.Context, argv []string) (host, error) {
	c, err := mcpgoclient.NewStdioMCPClient(argv[0], os.Environ(), argv[1:]...)
	if err != nil {
		return host{}, err
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "gohost", Version: "0"},
	}}); err != nil {
		c.Close()
		return host{}, err
	}
	return host{
		call: func(ctx context.Context, name string, args map[string]any) ([]byte, error) {
			res, err := c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}})
			if err != nil {
				return nil, err
			}
			return result(res, res.IsError)
		},
		list: func(ctx context.Context) ([]string, error) {
			res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
			if err != nil {
				return nil, err
			}
			names := make([]string, len(res.Tools))
			for i, t := range res.Tools {
				names[i] = t.Name
			}
			return names, nil
		},
		close: c.Close,
	}, nil
}
