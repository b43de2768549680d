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
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
	for _, p := range []string{"", ".a", "a.", "a..b"} {
		if _, err := newRedactPolicy(nil, []string{p}); err == nil {
			t.Errorf("newRedactPolicy(%q) = nil error, want one", p)
		}
	}
}

// TestRedactKeySpellings: a secret key is redacted however JSON lets it be
// written (escapes, any case, Unicode case folding), wherever a key can be
// (top level, nested, in arrays, past the depth whose path is followed),
// and MCP's own keys and lookalikes are kept.
func TestRedactKeySpellings(t *testing.T) {
	t.Parallel()
	pol, err := newRedactPolicy(DefaultRedactKeys, nil)
	if err != nil {
		t.Fatal(err)
	}
	redacted := []string{
		`password`, `PASSWORD`, `Password`, `pass\u0077ord`, `\u0070assword`, `PASS\u0057ORD`, `p\u0061\u0073\u0073word`,
		`\u0074oken`, `\u0054OKEN`, `to\u006Ben`, `tok\u0065n`, `access_token`, `refreshToken`, `X-Auth-Token`,
		`to\u212aen`, `toKen`, `\u017fecret`, `ſecret`, `client_secret`, `SECRET`, `s\u0065cret`,
		`api_key`, `API_KEY`, `api-key`, `apikey`, `APIKEY`, `x-api-key`, `api\u005fkey`,
		`Authorization`, `AUTHORIZATION`, `\u0061uthorization`, `auth`, `oauth`,
		`cookie`, `Set-Cookie`, `co\u006fkie`, `passwd`, `PASSWD`, `credential`, `Credentials`,
		`privateKey`, `private_key`, `sessionId`, `SESSION`, `token\ud83d\ude00`, `\ud83d\ude00token`,
		`pass\"word\"token`, `\\token`,
	}
	kept := []string{`progressToken`, `maxTokens`, `pass`, `tok\u0065`, `tok\/en`, `name`, `\u006eame`, `to ken`}
	wrap := []struct {
		name, pre, post string
	}{
		{"top", `{`, `,"n":1}`},
		{"params", `{"jsonrpc":"2.0","method":"m","params":{`, `}}`},
		{"array", `{"result":{"content":[1,{"a":2},{`, `}]}}`},
		{"error data", `{"error":{"code":1,"data":{"x":[{`, `}]}}}`},
		{"deep", `{"a":` + strings.Repeat(`[{"b":`, 40) + `{`, `}` + strings.Repeat(`}]`, 40) + `}`},
	}
	for _, w := range wrap {
		for _, k := range redacted {
			in := w.pre + `"` + k + `":"hunter2"` + w.post
			want := w.pre + `"` + k + `":"[redacted]"` + w.post
			for _, piece := range []int{1, 3, 7, len(in)} {
				if got, n := redactAll(t, pol, in, piece); got != want || n != 1 {
					t.Errorf("%s: key %s in pieces of %d: %s (%d redacted), want the value redacted", w.name, k, piece, got, n)
					break
				}
			}
		}
		for _, k := range kept {
			in := w.pre + `"` + k + `":"p-1"` + w.post
			if got, n := redactAll(t, pol, in, 2); got != in || n != 0 {
				t.Errorf("%s: key %s: %s (%d redacted), want it kept", w.name, k, got, n)
			}
		}
	}
	var decoded map[string]string
	for _, k := range redacted {
		if err := json.Unmarshal([]byte(`{"`+k+`":""}`), &decoded); err != nil {
			t.Errorf("the spelling %s is not valid JSON: %v", k, err)
		}
	}
}
