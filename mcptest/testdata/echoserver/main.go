// Command echoserver is a minimal legacy-era MCP server for mcptest's
// GoBuild test: it answers initialize and echoes tools/call arguments.
package main

import (
	"bufio"
	"encoding/json"
	"os"
)

func main() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Arguments struct {
					Text string `json:"text"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		switch req.Method {
		case "initialize":
			resp["result"] = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "echoserver", "version": "1"}}
		case "tools/call":
			resp["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": req.Params.Arguments.Text}}}
		default:
			resp["error"] = map[string]any{"code": -32601, "message": "method not found"}
		}
		if out.Encode(resp) != nil {
			return
		}
	}
}
