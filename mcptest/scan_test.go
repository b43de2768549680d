package mcptest

import (
	"strings"
	"testing"
)

func TestIDScanner(t *testing.T) {
	long := strings.Repeat("x", 300)
	cases := []struct {
		name, line, want string
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"result":{"t":"` + long + `"}}`, "7"},
		{"id last", `{"jsonrpc":"2.0","result":{"t":"` + long + `"},"id":42}`, "42"},
		{"string id", `{"result":{"t":"` + long + `"},"id":"a\"b"}`, `"a\"b"`},
		{"nested id ignored", `{"result":{"id":1,"t":"` + long + `","x":[{"id":2}]},"id":3}`, "3"},
		{"id-like text ignored", `{"result":{"t":"\"id\":5 ` + long + `"},"id":6}`, "6"},
		{"spaces", `{ "result" : "` + long + `" , "id" : 9 }`, "9"},
		{"no id", `{"result":"` + long + `"}`, ""},
		{"crlf", `{"id":11,"result":"` + long + "\"}\r", "11"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, chunk := range []int{1, 7, 4096} {
				s := newIDScanner(nil, 100)
				in := []byte("{\"id\":99}\n" + c.line + "\n{\"id\":100}\n")
				for i := 0; i < len(in); i += chunk {
					s.scan(in[i:min(i+chunk, len(in))])
				}
				if got := string(s.pop()); got != c.want {
					t.Errorf("chunks of %d: id %q, want %q", chunk, got, c.want)
				}
				if rest := s.pop(); rest != nil {
					t.Errorf("chunks of %d: a short line was taken as oversized: %q", chunk, rest)
				}
			}
		})
	}
}
