package wire_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		frame string
		kind  string // request, notification, response, or "" for an error
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, "request"},
		{`{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}`, "request"},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, "notification"},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, "notification"},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, "response"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, "response"},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, "response"},
		{`{"jsonrpc":"2.0","id":null,"result":{}}`, ""},
		{`{"jsonrpc":"2.0","result":{}}`, ""},
		{`{"jsonrpc":"2.0","id":1}`, ""},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, ""},
		{`{"id":1,"method":"ping"}`, ""},
		{`[1,2]`, ""},
		{`hello`, ""},
	}
	for _, tt := range tests {
		m, err := wire.ParseMessage([]byte(tt.frame))
		got := ""
		if err == nil {
			switch {
			case m.IsRequest():
				got = "request"
			case m.IsNotification():
				got = "notification"
			case m.IsResponse():
				got = "response"
			}
		}
		if got != tt.kind {
			t.Errorf("ParseMessage(%s) is %q (err %v), want %q", tt.frame, got, err, tt.kind)
		}
	}
}
