package mcptest

import (
	"encoding/json"
	"testing"
)

// TestToolParams: CallTool's params are the bytes encoding/json makes of
// the map {"name": name, "arguments": args}.
func TestToolParams(t *testing.T) {
	for _, name := range []string{"echo", "", "a b", `q"uote`, `back\slash`, "<tag>&", "é", "tab\t", "\x7f"} {
		for _, args := range []any{nil, map[string]any{"text": "hi", "n": 1}, json.RawMessage(`{ "a" : [1, 2] }`), []int{1}, "s"} {
			m := map[string]any{"name": name}
			if args != nil {
				m["arguments"] = args
			}
			want, _ := json.Marshal(m)
			got, err := toolParams(name, args)
			if err != nil || string(got) != string(want) {
				t.Errorf("toolParams(%q, %v) = %s, %v; want %s", name, args, got, err, want)
			}
		}
	}
	if _, err := toolParams("x", func() {}); err == nil {
		t.Error("toolParams with a func as arguments: no error, want encoding/json's")
	}
}
