package mcptest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// echoServer is a minimal legacy-era MCP server: it answers initialize
// and echoes tools/call arguments, one line at a time.
func echoServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		var req wire.Message
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue // not a request: nothing to answer
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case wire.MethodInitialize:
			resp["result"] = map[string]any{"protocolVersion": wire.Version20251125, "capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "echo", "version": "1"}}
		case wire.MethodToolsCall:
			resp["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(req.Params)}}}
		default: // server/discover too: this is a legacy server
			resp["error"] = map[string]any{"code": wire.CodeMethodNotFound, "message": "method not found"}
		}
		b, _ := json.Marshal(resp)
		if _, err := stdout.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return in.Err()
}

func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// In a test: s := mcptest.StartServer(t, mcptest.Command("./myserver")).
	s, err := mcptest.Start(ctx, mcptest.InProcess(echoServer))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fmt.Println("protocol:", s.ProtocolVersion())

	// Stall the host's reads of stdout: a response can only reach the pipe.
	s.StallReads()
	p := s.Send(wire.MethodToolsCall, map[string]any{"name": "echo", "arguments": map[string]any{"n": 1}})
	s.ResumeReads()
	r, err := p.Wait(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("id %d: %s\n", r.ID, r.Result)
	st := s.Stats()
	fmt.Printf("%d requests, %d late responses\n", st.Requests, st.LateResponses)
	// Output:
	// protocol: 2025-11-25
	// id 3: {"content":[{"text":"{\"arguments\":{\"n\":1},\"name\":\"echo\"}","type":"text"}]}
	// 3 requests, 0 late responses
}
