package integration_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// The fake server as a helper child, for BenchmarkProxyToolsCall.
func init() {
	mcptest.RegisterHelper("bench-fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// behindProxy returns the command that runs the fake server behind
// `mcpstdio proxy`, the built command ($MCPSTDIO_BIN, which benchratios
// sets, else built into tb's temporary directory), recording as it does
// in a state directory of tb's.
func behindProxy(tb testing.TB, ctx context.Context) *exec.Cmd {
	tb.Helper()
	fake, err := mcptest.HelperCommand(ctx, "bench-fake")
	if err != nil {
		tb.Fatal(err)
	}
	bin := os.Getenv("MCPSTDIO_BIN")
	if bin == "" {
		bin = filepath.Join(tb.TempDir(), "mcpstdio")
		if runtime.GOOS == "windows" {
			bin += ".exe"
		}
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio").CombinedOutput(); err != nil {
			tb.Fatalf("building the command: %v\n%s", err, out)
		}
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"proxy", "--", fake.Path}, fake.Args[1:]...)...)
	cmd.Env = append(fake.Env, "MCPSTDIO_STATE_DIR="+tb.TempDir())
	return cmd
}

// BenchmarkProxyToolsCall: 1 MiB tools/call responses to the official Go
// SDK client (mcp.CommandTransport, as an application starts a server),
// from the fake server directly and through a proxy process, one session
// per sub-benchmark, one after the other in the same run.
func BenchmarkProxyToolsCall(b *testing.B) {
	args := fakeserver.BigArgs{Bytes: 1 << 20}.Map()
	for _, m := range []struct {
		name    string
		proxied bool
	}{{"direct", false}, {"proxy", true}} {
		b.Run(m.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
			defer cancel()
			cmd, err := mcptest.HelperCommand(ctx, "bench-fake")
			if err != nil {
				b.Fatal(err)
			}
			if m.proxied {
				cmd = behindProxy(b, ctx)
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
// a 1 MiB tools/call to the Go SDK client, directly and through the
// command's proxy.
func TestProxyToolsCallHarness(t *testing.T) {
	for _, proxied := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "proxy"}[proxied], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd, err := mcptest.HelperCommand(ctx, "bench-fake")
			if err != nil {
				t.Fatal(err)
			}
			if proxied {
				cmd = behindProxy(t, ctx)
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
