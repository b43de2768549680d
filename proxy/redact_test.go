package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

func redactAll(t *testing.T, pol *redactPolicy, in string, piece int) (string, int) {
	t.Helper()
	var out []byte
	r := newRedactor(pol, func(b []byte) { out = append(out, b...) })
	b := []byte(in)
	for len(b) > 0 {
		n := min(piece, len(b))
		r.write(b[:n])
		b = b[n:]
	}
	return string(out), r.count
}

func TestRedactor(t *testing.T) {
	pol, err := newRedactPolicy(DefaultRedactKeys, []string{"params.arguments.query", "result.content.*.text", "params.list.1"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in, want string
		count          int
	}{
		{"nothing", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 0},
		{"key word", `{"params":{"arguments":{"password":"hunter2","q":1}}}`, `{"params":{"arguments":{"password":"[redacted]","q":1}}}`, 1},
		{"key word any case, number", `{"API_KEY":12345, "x":true}`, `{"API_KEY":"[redacted]", "x":true}`, 1},
		{"key word object", `{"Authorization":{"a":[1,2,{"b":"c"}]},"n":null}`, `{"Authorization":"[redacted]","n":null}`, 1},
		{"key word array", `{"tokens":["a","b\"c"],"z":0}`, `{"tokens":"[redacted]","z":0}`, 1},
		{"progressToken is kept", `{"_meta":{"progressToken":"p-1"}}`, `{"_meta":{"progressToken":"p-1"}}`, 0},
		{"path", `{"params":{"arguments":{"query":"secret stuff","other":"x"}}}`, `{"params":{"arguments":{"query":"[redacted]","other":"x"}}}`, 1},
		{"path with star", `{"result":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b\\n"}]}}`, `{"result":{"content":[{"type":"text","text":"[redacted]"},{"type":"text","text":"[redacted]"}]}}`, 2},
		{"path with index", `{"params":{"list":[1, 2 ,3]}}`, `{"params":{"list":[1, "[redacted]" ,3]}}`, 1},
		{"same key elsewhere is kept", `{"query":"q","params":{"query":"q"}}`, `{"query":"q","params":{"query":"q"}}`, 0},
		{"escapes in strings", `{"a":"x\"password\":\"y","secret":"s\\\"t"}`, `{"a":"x\"password\":\"y","secret":"[redacted]"}`, 1},
		{"whitespace", "{ \"secret\" : \"s\" ,\r\n \"k\" : [ 1 ] }", "{ \"secret\" : \"[redacted]\" ,\r\n \"k\" : [ 1 ] }", 1},
		{"unterminated head", `{"params":{"arguments":{"password":"hunt`, `{"params":{"arguments":{"password":"[redacted]"`, 1},
		{"not JSON", `Listening on :8080 token=abc`, `Listening on :8080 token=abc`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, piece := range []int{1, 2, 3, 7, len(tc.in)} {
				got, n := redactAll(t, pol, tc.in, piece)
				if got != tc.want || n != tc.count {
					t.Errorf("redact(%q) in pieces of %d = %q (%d redacted), want %q (%d)", tc.in, piece, got, n, tc.want, tc.count)
				}
			}
		})
	}
}

// TestRedactorKeepsJSONValid checks that redacting a valid message leaves a
// valid one, and that with nothing to redact the bytes are unchanged.
func TestRedactorKeepsJSONValid(t *testing.T) {
	pol, _ := newRedactPolicy(DefaultRedactKeys, []string{"params.arguments"})
	in := `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"login","arguments":{"user":"u","pw":[1,{"x":"y"}]},"_meta":{"progressToken":7,"session_id":"abc"}}}`
	got, n := redactAll(t, pol, in, 5)
	if !json.Valid([]byte(got)) {
		t.Fatalf("redacted message is not valid JSON: %s", got)
	}
	if n != 2 || strings.Contains(got, `"u"`) || strings.Contains(got, "abc") {
		t.Errorf("redact = %s (%d values), want arguments and session_id redacted", got, n)
	}
	none, _ := newRedactPolicy(nil, nil)
	if got, n := redactAll(t, none, in, 3); got != in || n != 0 {
		t.Errorf("with no policy: %s (%d), want the input unchanged", got, n)
	}
}

func TestRedactPathErrors(t *testing.T) {
	for _, p := range []string{"", ".a", "a.", "a..b"} {
		if _, err := newRedactPolicy(nil, []string{p}); err == nil {
			t.Errorf("newRedactPolicy(%q) = nil error, want one", p)
		}
	}
}
