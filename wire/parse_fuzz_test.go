package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/wire"
)

// referenceParse is ParseMessage done the slow, obvious way with
// encoding/json: the fast envelope scanner must agree with it. Keys match
// as written (an escaped "\u0069d" is not "id"), and an envelope key given
// twice is an error.
func referenceParse(frame []byte) (*wire.Message, error) {
	var top any
	if err := json.Unmarshal(frame, &top); err != nil {
		return nil, err
	}
	if _, ok := top.(map[string]any); !ok {
		return nil, errors.New("not an object")
	}
	raw := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(frame))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, err
	}
	for dec.More() {
		start := dec.InputOffset()
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		key := bytes.Trim(frame[start:dec.InputOffset()], " \t\r\n,:")
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		k := string(key)
		if len(k) >= 2 {
			k = k[1 : len(k)-1]
		}
		switch k {
		case "jsonrpc", "id", "method", "params", "result", "error":
			if _, dup := raw[k]; dup {
				return nil, errors.New("duplicate key")
			}
			raw[k] = val
		}
	}
	var m wire.Message
	m.ID, m.Params, m.Result = raw["id"], raw["params"], raw["result"]
	if v, ok := raw["method"]; ok {
		if err := json.Unmarshal(v, &m.Method); err != nil {
			return nil, err
		}
	}
	if v, ok := raw["error"]; ok {
		if err := json.Unmarshal(v, &m.Error); err != nil {
			return nil, err
		}
	}
	v, ok := raw["jsonrpc"]
	if !ok || json.Unmarshal(v, &m.JSONRPC) != nil || m.JSONRPC != "2.0" {
		return nil, errors.New("bad jsonrpc")
	}
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		return nil, errors.New("bad shape")
	}
	return &m, nil
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a\"b","result":{"content":[{"type":"text","text":"x\\\"}]"}]}}`,
		` { "jsonrpc" : "2.0" , "method" : "notifications/progress" , "params" : { "progressToken" : 7 } } `,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"result":[1,{"a":[]}],"method":5}`,
		`{"jsonrpc":"2.0","method":"a","method":"b"}`,
		`{"JSONRPC":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","\\u0069d":1,"method":"x"}`, `[{"jsonrpc":"2.0","id":1,"result":{}}]`,
		`[1,2]`, `null`, `"x"`, `{}`, `{"jsonrpc":2}`, `not json`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		got, gerr := wire.ParseMessage(frame)
		want, werr := referenceParse(frame)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("ParseMessage(%q) error = %v, reference error = %v", frame, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("ParseMessage(%q) mismatch (-reference +got):\n%s", frame, diff)
		}
	})
}
