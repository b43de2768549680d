package integration

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// GoSDKMaxFrame is the official Go SDK's transport limit on one inbound
// JSON-RPC message: mcp.DefaultMaxLineLength, which mcp.CommandTransport
// uses and cannot change.
const GoSDKMaxFrame = mcp.DefaultMaxLineLength

// GoSDKHost is an assertions.HostFactory for a client of the official Go
// SDK: mcp.NewClient connected with mcp.CommandTransport{Command: cmd}, the
// way an application starts a stdio server with it.
func GoSDKHost(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpstdio-integration", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	return goSDKHost{cs}, nil
}

type goSDKHost struct{ cs *mcp.ClientSession }

func (h goSDKHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	res, err := h.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (h goSDKHost) Close() error { return h.cs.Close() }

// GoSDKIOHost is an assertions.HostFactory for a client of the official Go
// SDK over mcp.IOTransport with MaxLineLength set to maxLine: the same
// framer as mcp.CommandTransport (both build it with newIOConnLimited in
// mcp/transport.go), with a limit the caller chooses rather than the fixed
// 16 MiB. It exists so that the limit criteria can run with small frames;
// the process is started and reaped here instead of by CommandTransport.
func GoSDKIOHost(maxLine int) assertions.HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
		stdin, stdout, err := startPiped(cmd)
		if err != nil {
			return nil, err
		}
		c := mcp.NewClient(&mcp.Implementation{Name: "mcpstdio-integration", Version: "0"}, nil)
		cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin, MaxLineLength: maxLine}, nil)
		if err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, err
		}
		return goSDKIOHost{goSDKHost{cs}, cmd}, nil
	}
}

// startPiped starts cmd with its stdin and stdout on pipes and returns
// their ends.
func startPiped(cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser, err error) {
	if stdin, err = cmd.StdinPipe(); err != nil {
		return nil, nil, err
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return stdin, stdout, nil
}

type goSDKIOHost struct {
	goSDKHost
	cmd *exec.Cmd
}

// Close closes the session, which closes the server's stdin, and waits for
// the server to exit; cmd is bound to the battery's context, which kills a
// server that does not.
func (h goSDKIOHost) Close() error { return cmp.Or(h.cs.Close(), h.cmd.Wait()) }

// MCPGoHost is an assertions.HostFactory for a client of mcp-go: the stdio
// client (client.NewStdioMCPClientWithOptions, which starts the command)
// followed by Initialize, which probes server/discover and falls back to
// the initialize handshake. The transport is given cmd itself through
// transport.WithCommandFunc, so that cmd's context, which the battery uses
// to kill a stuck server, stays attached; everything else (pipes, stderr
// drain, shutdown) is mcp-go's own.
func MCPGoHost(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
	c, err := mcpgoclient.NewStdioMCPClientWithOptions(cmd.Path, nil, cmd.Args[1:],
		transport.WithCommandFunc(func(context.Context, string, []string, []string) (*exec.Cmd, error) { return cmd, nil }))
	if err != nil {
		return nil, err
	}
	h := mcpGoHost{c}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "mcpstdio-integration", Version: "0"},
	}}); err != nil {
		return h, fmt.Errorf("mcp-go Initialize: %w", err)
	}
	return h, nil
}

type mcpGoHost struct{ c *mcpgoclient.Client }

func (h mcpGoHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	res, err := h.c.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, errors.New("mcp-go CallTool returned no result and no error")
	}
	return json.Marshal(res)
}

func (h mcpGoHost) Close() error { return h.c.Close() }
