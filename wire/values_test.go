package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

func TestKey(t *testing.T) {
	same := [][2]string{
		{`"a&b"`, `"a\u0026b"`},
		{` "tok" `, `"tok"`},
		{`7`, ` 7`},
		{`"é"`, `"\u00e9"`},
		{`{"a":1, "b":[1, 2]}`, `{"b":[1,2],"a":1}`},
	}
	for _, p := range same {
		if a, b := wire.Key(json.RawMessage(p[0])), wire.Key(json.RawMessage(p[1])); a != b || a == "" {
			t.Errorf("Key(%s) = %q, Key(%s) = %q: want equal, non-empty", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{{`1`, `"1"`}, {`"a"`, `"b"`}, {`2`, `2.5`}}
	for _, p := range differ {
		if a, b := wire.Key(json.RawMessage(p[0])), wire.Key(json.RawMessage(p[1])); a == b {
			t.Errorf("Key(%s) = Key(%s) = %q: want different", p[0], p[1], a)
		}
	}
	for _, empty := range []string{``, `null`, ` null `, `{`, `"x`, `1 2`} {
		if k := wire.Key(json.RawMessage(empty)); k != "" {
			t.Errorf("Key(%q) = %q, want empty", empty, k)
		}
	}
}

func TestMember(t *testing.T) {
	obj := json.RawMessage(` { "a" : {"progressToken":"inner"}, "progressToken" : "x\"y" , "n":[1,{"progressToken":2}] ,"progressToken":3}`)
	if got := string(wire.Member(obj, "progressToken")); got != "3" {
		t.Errorf("Member(progressToken) = %s, want the last top-level one, 3", got)
	}
	if got := string(wire.Member(obj, "a")); got != `{"progressToken":"inner"}` {
		t.Errorf("Member(a) = %s", got)
	}
	if got := wire.Member(obj, "missing"); got != nil {
		t.Errorf("Member(missing) = %s, want nil", got)
	}
	if got := wire.Member(json.RawMessage(`[1]`), "a"); got != nil {
		t.Errorf("Member of an array = %s, want nil", got)
	}
}
