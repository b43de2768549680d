package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestThroughProxy: the official Go SDK's client and mcp-go's client call
// servers of both SDKs through `mcpstdio proxy`, the built command, and get
// the same results as without it; the record accounts for every call.
func TestThroughProxy(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "mcpstdio")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel) // after the parallel subtests
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio").CombinedOutput(); err != nil {
		t.Fatalf("building the command: %v\n%s", err, out)
	}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"text": "héllo, \"world\"\n"}},
		{"big", map[string]any{"bytes": 300000}},
		{"search", map[string]any{"query": "a", "total": 500}},
		{"slow", map[string]any{"steps": 3, "intervalMs": 5}},
	}
	hosts := []struct {
		name string
		f    assertions.HostFactory
	}{{"go-sdk client", integration.GoSDKHost}, {"mcp-go client", integration.MCPGoHost}}
	for _, server := range []string{"go-sdk", "mcp-go"} {
		for _, h := range hosts {
			t.Run(h.name+" to "+server+" server", func(t *testing.T) {
				t.Parallel()
				run := func(cmd *exec.Cmd) []json.RawMessage {
					t.Helper()
					host, err := h.f(ctx, cmd)
					if err != nil {
						t.Fatalf("%s: %v", cmd, err)
					}
					var got []json.RawMessage
					for _, c := range calls {
						res, err := host.CallTool(ctx, c.tool, c.args)
						if err != nil {
							t.Fatalf("%s: calling %s: %v", cmd, c.tool, err)
						}
						got = append(got, res)
					}
					if err := host.Close(); err != nil {
						t.Logf("closing the host: %v", err)
					}
					return got
				}
				direct := run(mustHelper(t, ctx, server))

				srv := mustHelper(t, ctx, server)
				log := filepath.Join(t.TempDir(), "rec.ndjson")
				pc := exec.CommandContext(ctx, bin, append([]string{"proxy", "-log", log, "--", srv.Path}, srv.Args[1:]...)...)
				pc.Env = srv.Env
				proxied := run(pc)

				if diff := cmp.Diff(direct, proxied); diff != "" {
					t.Errorf("results through the proxy differ from direct ones (-direct +proxied):\n%s", diff)
				}
				f, err := os.Open(log)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				var sum *record.Event
				err = record.Read(f, func(e record.Event) error {
					if e.Ev == record.EvSummary {
						sum = &e
					}
					return nil
				})
				if err != nil || sum == nil {
					t.Fatalf("record: %v, summary %v", err, sum)
				}
				m := sum.Metrics
				if m.UnknownResponses != 0 || m.ParseErrors != 0 {
					t.Errorf("record metrics %+v: want no unknown response, no junk", *m)
				}
				// On a loaded machine the observer may fall behind and lose
				// detail (it never holds the traffic up). The record must then
				// count what it lost; it may not claim a complete session.
				if lost := m.DroppedBytes > 0 || m.GapFrames > 0 || m.DroppedEvents > 0; lost {
					t.Logf("the observer lost detail (dropped %d bytes, %d events, %d gap frames): the record says so; requests %d, responses %d",
						m.DroppedBytes, m.DroppedEvents, m.GapFrames, m.Requests, m.Responses)
					if m.Responses > m.Requests {
						t.Errorf("record metrics %+v: more responses than requests", *m)
					}
				} else if m.Requests < int64(len(calls)) || m.Responses < m.Requests {
					t.Errorf("record metrics %+v: no detail lost, want every request answered", *m)
				}
			})
		}
	}
}

// mustHelper is mcptest.HelperCommand, failing t on its error.
func mustHelper(t *testing.T, ctx context.Context, name string) *exec.Cmd {
	t.Helper()
	cmd, err := mcptest.HelperCommand(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return cmd
}
