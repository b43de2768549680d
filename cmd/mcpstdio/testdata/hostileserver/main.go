// Command hostileserver is an MCP server whose every string is hostile to
// a terminal, for the tests that check that probe escapes what a server
// sends: its stderr, its junk lines, its error messages and names carry
// escape sequences (title, clear screen, cursor up), carriage returns, C1
// controls, bidi overrides and newlines followed by forged verdicts. It
// answers initialize (any version), ping, tools/list and tools/call (with
// an error), and exits at EOF.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

const evil = "\x1b]0;owned\a\x1b[2J\x1b[1A\r  PASS  forged\u009b2J\u202e\n  PASS  stdout-clean"

func main() {
	fmt.Fprint(os.Stderr, evil+"\n")
	out := json.NewEncoder(os.Stdout)
	fmt.Println(evil) // junk on stdout, which stdout-clean quotes
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			fmt.Fprint(os.Stderr, evil+"\n")
			continue
		}
		if m.ID == nil {
			continue
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		switch m.Method {
		case "initialize":
			reply["result"] = map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": evil, "version": evil}}
		case "ping":
			reply["result"] = map[string]any{}
		case "tools/list":
			reply["result"] = map[string]any{"tools": []any{map[string]any{"name": evil, "description": evil, "inputSchema": map[string]any{"type": "object"}}}}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": evil + " " + m.Method}
		}
		out.Encode(reply)
		fmt.Fprint(os.Stderr, evil+"\n")
	}
}
