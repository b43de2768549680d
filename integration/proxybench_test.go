package integration_test

import (
	"context"
	"io"
	"os"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/benchproxy"
	"github.com/mcpstdio/mcpstdio/internal/pollable"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// The fake server and the proxy in front of it as helper children, for
// BenchmarkProxyToolsCall.
func init() {
	mcptest.RegisterHelper("bench-fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
	mcptest.RegisterHelper("bench-proxy", benchProxy)
}

// benchProxy is `mcpstdio proxy` in a child: the proxy between its own
// stdio (non-blocking duplicates, as the command uses, where the system
// has them) and the helper its args name, recording as the command does.
func benchProxy(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
	args := mcptest.HelperArgs()
	cmd, err := mcptest.HelperCommand(ctx, args[0], args[1:]...)
	if err != nil {
		return err
	}
	nb := func(f *os.File) *os.File {
		if d := pollable.Dup(f); d != nil {
			return d
		}
		return f
	}
	return benchproxy.Run(ctx, cmd, proxy.Streams{Stdin: nb(os.Stdin), Stdout: nb(os.Stdout), Stderr: nb(os.Stderr)}, "")
}

// BenchmarkProxyToolsCall: 1 MiB tools/call responses to the official Go
// SDK client (mcp.CommandTransport, as an application starts a server),
// from the fake server directly and through a proxy process, one session
// per sub-benchmark, one after the other in the same run.
func BenchmarkProxyToolsCall(b *testing.B) {
	args := fakeserver.BigArgs{Bytes: 1 << 20}.Map()
	for _, m := range []struct{ name, helper string }{{"direct", ""}, {"proxy", "bench-proxy"}} {
		b.Run(m.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
			defer cancel()
			cmd, err := mcptest.HelperCommand(ctx, "bench-fake")
			if m.helper != "" {
				cmd, err = mcptest.HelperCommand(ctx, m.helper, "bench-fake")
			}
			if err != nil {
				b.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			b.SetBytes(1 << 20)
			for b.Loop() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fakeserver.ToolBig, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("tools/call big: %v %+v", err, res)
				}
			}
		})
	}
}

// TestProxyToolsCallHarness runs the benchmark's harness once each way:
// a 1 MiB tools/call to the Go SDK client, directly and through the proxy
// helper.
func TestProxyToolsCallHarness(t *testing.T) {
	for _, way := range [][]string{{"bench-fake"}, {"bench-proxy", "bench-fake"}} {
		t.Run(way[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd, err := mcptest.HelperCommand(ctx, way[0], way[1:]...)
			if err != nil {
				t.Fatal(err)
			}
			c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fakeserver.ToolBig, Arguments: fakeserver.BigArgs{Bytes: 1 << 20}.Map()})
			if err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("tools/call big: %v %+v", err, res)
			}
			if n := len(res.Content[0].(*mcp.TextContent).Text); n < 1<<20 {
				t.Errorf("text of %d bytes, want 1 MiB", n)
			}
		})
	}
}
