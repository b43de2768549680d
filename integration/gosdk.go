package integration

import (
	"context"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// GoSDKServer returns a ServeFunc that serves the tools with the official Go
// SDK on its own transport, mcp.IOTransport, over the given streams: no
// adapter is needed, the ServeFunc's streams are what IOTransport takes.
func GoSDKServer() mcptest.ServeFunc {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
		return newGoSDKServer().Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	}
}

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

type searchIn struct {
	Query string `json:"query,omitempty"`
	Total int    `json:"total,omitempty"`
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newGoSDKServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpstdio-integration-go-sdk", Version: "0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "returns N bytes of text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			t, err := bigText(in.Bytes)
			if err != nil {
				return nil, nil, err
			}
			return text(t), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "works in steps, with progress, until done or cancelled"},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			steps, every := slowArgs(in.Steps, in.IntervalMs)
			token := req.Params.GetProgressToken()
			tick := time.NewTicker(every)
			defer tick.Stop()
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
	mcp.AddTool(s, &mcp.Tool{Name: "search", Description: "a bounded page of matching records, with nextCursor"},
		func(_ context.Context, _ *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchResult, error) {
			res := search(in.Query, in.Total)
			return text(res.summary()), res, nil
		})
	return s
}
