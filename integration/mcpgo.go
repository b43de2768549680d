package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"sync"
	"sync/atomic"
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

// MCPGoLoopServer returns a ServeFunc that serves the same tools as
// MCPGoServer with mcp-go's MCPServer behind a read loop of its own that
// handles each message before it reads the next, as many hand-written stdio
// servers do (and as mcp-go's own loop does with a tool call when its queue
// is full): while a response's write blocks, or a tool works, it reads
// nothing, neither a cancel nor another request. Progress notifications go
// out from a goroutine of their own, as they come.
func MCPGoLoopServer() mcptest.ServeFunc {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
		srv := newMCPGoServer()
		sess := &loopSession{notes: make(chan mcp.JSONRPCNotification, 64)}
		if err := srv.RegisterSession(ctx, sess); err != nil {
			return err
		}
		ctx = srv.WithContext(ctx, sess)
		var mu sync.Mutex
		write := func(v any) error {
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			_, err = stdout.Write(append(b, '\n'))
			return err
		}
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case n := <-sess.notes:
					_ = write(n)
				case <-done:
					return
				}
			}
		}()
		defer wg.Wait()
		defer close(done)
		r := bufio.NewReader(stdin)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				if resp := srv.HandleMessage(ctx, line); resp != nil {
					if werr := write(resp); werr != nil {
						return werr
					}
				}
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}
}

// loopSession is MCPGoLoopServer's one client session.
type loopSession struct {
	initialized atomic.Bool
	notes       chan mcp.JSONRPCNotification
}

func (s *loopSession) Initialize()                                         { s.initialized.Store(true) }
func (s *loopSession) Initialized() bool                                   { return s.initialized.Load() }
func (s *loopSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }
func (s *loopSession) SessionID() string                                   { return "mcpstdio-loop" }
