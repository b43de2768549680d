package wire

import (
	"encoding/json"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, bad := range []string{"", ".a", "a.", "a..b"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) = nil error, want one", bad)
		}
	}
	p, err := ParsePath("result.content.*.text")
	if err != nil || p.String() != "result.content.*.text" {
		t.Fatalf("ParsePath = %v, %v", p, err)
	}
	if !p.Match([]string{"result", "content", "3", "text"}) || p.Match([]string{"result", "content", "text"}) || p.Match([]string{"result", "other", "0", "text"}) {
		t.Errorf("%v matches wrongly", p)
	}
}

// TestDecodeKey: keys decode as encoding/json decodes them; a key cut
// inside an escape decodes up to it.
func TestDecodeKey(t *testing.T) {
	for _, raw := range []string{`id`, `pass\u0077ord`, `\u0074oken`, `a\"b`, `a\\b`, `a\/b`, `\b\f\n\r\t`, `x\ud83d\ude00y`, `\u00e9t\u00C9`, `\ud83dz`, `\ude00`} {
		var want string
		if err := json.Unmarshal([]byte(`"`+raw+`"`), &want); err != nil {
			t.Fatal(err)
		}
		if got := DecodeKey([]byte(raw)); got != want {
			t.Errorf("DecodeKey(%s) = %q, want %q", raw, got, want)
		}
	}
	for raw, want := range map[string]string{`ab\u00`: "ab", `ab\`: "ab", `x\ud83d`: "x", `x\ud83d\ude`: "x", `\q`: `\q`} {
		if got := DecodeKey([]byte(raw)); got != want {
			t.Errorf("DecodeKey(%s) = %q, want %q", raw, got, want)
		}
	}
}

func TestContainsFold(t *testing.T) {
	for _, tc := range []struct {
		s, word string
		want    bool
	}{
		{"MyToken", "token", true}, {"TOKEN", "token", true}, {"to\u212aen", "token", true}, {"\u017fecret", "secret", true},
		{"tok", "token", false}, {"tokén", "token", false}, {"", "token", false}, {"x", "", true},
	} {
		if got := ContainsFold(tc.s, tc.word); got != tc.want {
			t.Errorf("ContainsFold(%q, %q) = %v, want %v", tc.s, tc.word, got, tc.want)
		}
	}
}

// TestScannerEscapedKeys: the Scanner finds "id" and "method" however
// their keys are escaped, as ParseMessage does.
func TestScannerEscapedKeys(t *testing.T) {
	line := `{"jsonrpc":"2.0","\u0069d":7,"\u006d\u0065\u0074\u0068\u006f\u0064":"ping"}` + "\n"
	var got Envelope
	sc := NewScanner(func(e Envelope) {
		got = e
		got.ID, got.Method = append([]byte(nil), e.ID...), append([]byte(nil), e.Method...)
	})
	sc.Write([]byte(line))
	m, err := ParseMessage([]byte(line[:len(line)-1]))
	if err != nil {
		t.Fatal(err)
	}
	if string(got.ID) != string(m.ID) || string(got.Method) != `"`+m.Method+`"` {
		t.Errorf("Scanner found id %s method %s; ParseMessage id %s method %q", got.ID, got.Method, m.ID, m.Method)
	}
}
