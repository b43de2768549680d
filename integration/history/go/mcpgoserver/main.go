// Command mcpgoserver serves, with mcp-go's stdio loop on its own stdin and
// stdout, the tools the server criteria need: big (a result of N bytes),
// slow (steps with progress, until done or cancelled) and echo. It is built
// against each pinned mcp-go release (../pins) by the history test.
package main

import (
	"context"
	"log"
	"os"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	s := server.NewMCPServer("mcpstdio-history-mcp-go", "0")
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("returns N bytes of text"), mcp.WithNumber("bytes")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("x", min(max(req.GetInt("bytes", 0), 0), 64<<20))), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("works in steps, with progress, until done or cancelled"),
		mcp.WithNumber("steps"), mcp.WithNumber("intervalMs")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps := max(req.GetInt("steps", 0), 1)
			every := time.Duration(max(req.GetInt("intervalMs", 0), 1)) * time.Millisecond
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			srv := server.ServerFromContext(ctx)
			tick := time.NewTicker(every)
			defer tick.Stop()
			for i := range steps {
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-tick.C:
				}
				if token != nil && srv != nil {
					_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
						"progressToken": token, "progress": i + 1, "total": steps})
				}
			}
			return mcp.NewToolResultText("done"), nil
		})
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("returns its text"), mcp.WithString("text")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(req.GetString("text", "")), nil
		})
	ss := server.NewStdioServer(s)
	ss.SetErrorLogger(log.New(os.Stderr, "mcp-go: ", log.LstdFlags))
	if err := ss.Listen(context.Background(), os.Stdin, os.Stdout); err != nil && err != context.Canceled {
		log.Fatal(err)
	}
}
