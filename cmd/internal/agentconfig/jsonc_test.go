package agentconfig

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseJSON checks the parser against encoding/json: in strict syntax
// it takes exactly what json.Valid takes, and every value's range holds
// valid JSON; with comments and trailing commas it still takes all of it.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}],"c":"\u00e9\n"}`, `"x"`, `-1.5e+3`, `[1,]`, `{"a":1,}`,
		"{\"a\": // c\n 1}", `{"a" /* c */ : 2}`, `[tru]`, `{"a":"\x"}`, `01`, `[1 2]`, ` true `, `{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if bytes.HasPrefix(b, []byte("\ufeff")) || bytes.Count(b, []byte("["))+bytes.Count(b, []byte("{")) > maxDepth {
			return // a byte order mark, or nesting past the parser's bound: json.Valid differs on purpose
		}
		v, err := parseJSON(b, jsonSyntax{})
		if (err == nil) != json.Valid(b) {
			t.Fatalf("parseJSON(%q) = %v, json.Valid = %v", b, err, json.Valid(b))
		}
		if err != nil {
			return
		}
		var check func(v *jsonValue)
		check = func(v *jsonValue) {
			if !json.Valid(b[v.start:v.end]) {
				t.Fatalf("%q: the value at [%d,%d) is %q, not JSON", b, v.start, v.end, b[v.start:v.end])
			}
			for _, e := range v.elems {
				check(e)
			}
			for _, m := range v.members {
				check(m.val)
			}
		}
		check(v)
		if _, err := parseJSON(b, jsonSyntax{comments: true, trailingCommas: true}); err != nil {
			t.Fatalf("parseJSON(%q) with comments and trailing commas: %v; strict: ok", b, err)
		}
	})
}
