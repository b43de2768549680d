// Command gosdkserver serves, with the official Go SDK on its own stdin and
// stdout (mcp.StdioTransport), the tools the server criteria need: big (a
// result of N bytes), slow (steps with progress, until done or cancelled)
// and echo. It is built against each pinned go-sdk release (../pins) by the
// history test.
package main

import (
	"context"
	"log"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type bigIn struct {
	Bytes int `json:"bytes,omitempty"`
}

type slowIn struct {
	Steps      int `json:"steps,omitempty"`
	IntervalMs int `json:"intervalMs,omitempty"`
}

type echoIn struct {
	Text string `json:"text,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpstdio-history-go-sdk", Version: "0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "returns N bytes of text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", min(max(in.Bytes, 0), 64<<20))), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "works in steps, with progress, until done or cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			tick := time.NewTicker(time.Duration(max(in.IntervalMs, 1)) * time.Millisecond)
			defer tick.Stop()
			steps := max(in.Steps, 1)
			for i := range steps {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-tick.C:
				}
				if token != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i + 1), Total: float64(steps)})
				}
			}
			return text("done"), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Print(err)
	}
}
