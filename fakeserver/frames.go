package fakeserver

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpstdio/mcpstdio/wire"
)

// envelope is a JSON-RPC response; jsonrpc comes first on the wire.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *wire.RPCError  `json:"error,omitempty"`
}

func marshal(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakeserver: marshal %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func errorFrame(id json.RawMessage, code int64, msg string, data any) *frame {
	e := &wire.RPCError{Code: code, Message: msg}
	if data != nil {
		e.Data = marshal(data)
	}
	b := marshal(envelope{JSONRPC: "2.0", ID: id, Error: e})
	return &frame{buf: b, bodyStart: len(b), bodyEnd: len(b)}
}

func resultFrame(w *work, result map[string]any) *frame {
	if w.modern {
		result["resultType"] = "complete"
	}
	b := marshal(envelope{JSONRPC: "2.0", ID: w.rawID, Result: result})
	return &frame{buf: b, bodyStart: len(b), bodyEnd: len(b)}
}

// cancelledFrame is the response for work cancelled before it produced one:
// nil (no response), unless Faults.RespondAfterCancel.
func (s *Server) cancelledFrame(w *work) *frame {
	if !s.cfg.faults.RespondAfterCancel {
		return nil
	}
	return errorFrame(w.rawID, codeRequestCancelled, "context canceled", nil)
}
