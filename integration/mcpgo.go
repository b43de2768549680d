package integration

import (
	"context"
	"io"
	"log"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// MCPGoServer returns a ServeFunc that serves the tools with mcp-go on its
// own stdio loop, server.StdioServer.Listen, over the given streams; the
// SDK's error log goes to stderr.
//
// mcp-go keeps the stdio session in a package-level variable
// (server/stdio.go stdioSessionInstance), so two of these servers must not
// run at the same time in one process: run them as child processes for
// that.
func MCPGoServer() mcptest.ServeFunc {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		ss := server.NewStdioServer(newMCPGoServer())
		ss.SetErrorLogger(log.New(stderr, "mcp-go: ", log.LstdFlags))
		return ss.Listen(ctx, stdin, stdout)
	}
}

func newMCPGoServer() *server.MCPServer {
	s := server.NewMCPServer("mcpstdio-integration-mcp-go", "0")
	s.AddTool(mcp.NewTool("big", mcp.WithDescription("returns N bytes of text"), mcp.WithNumber("bytes")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			t, err := bigText(req.GetInt("bytes", 0))
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(t), nil
		})
	s.AddTool(mcp.NewTool("slow", mcp.WithDescription("works in steps, with progress, until done or cancelled"),
		mcp.WithNumber("steps"), mcp.WithNumber("intervalMs")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			steps, every := slowArgs(req.GetInt("steps", 0), req.GetInt("intervalMs", 0))
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
	s.AddTool(mcp.NewTool("search", mcp.WithDescription("a bounded page of matching records, with nextCursor"),
		mcp.WithString("query"), mcp.WithNumber("total")),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := search(req.GetString("query", ""), req.GetInt("total", 0))
			return mcp.NewToolResultStructured(res, res.summary()), nil
		})
	return s
}
