package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// Protocol revisions this package speaks.
const (
	// Version20260728 is the stateless revision: no initialize handshake on
	// stdio, _meta on every request, server/discover, no ping.
	Version20260728 = "2026-07-28"
	// Version20251125 is the newest revision with the initialize handshake.
	Version20251125 = "2025-11-25"
	// Version20250618 is the revision before Version20251125.
	Version20250618 = "2025-06-18"
	// LatestVersion is the newest revision this package knows.
	LatestVersion = Version20260728
)

// Method names used by this package.
const (
	MethodInitialize  = "initialize"
	MethodInitialized = "notifications/initialized"
	MethodPing        = "ping"
	MethodDiscover    = "server/discover"
	MethodToolsList   = "tools/list"
	MethodToolsCall   = "tools/call"
	MethodCancelled   = "notifications/cancelled"
	MethodProgress    = "notifications/progress"
	MethodMessage     = "notifications/message"
)

// Keys of the _meta object that every request carries in the 2026-07-28
// revision.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
)

// JSON-RPC and MCP error codes.
const (
	CodeParseError                 = -32700
	CodeInvalidRequest             = -32600
	CodeMethodNotFound             = -32601
	CodeInvalidParams              = -32602
	CodeInternalError              = -32603
	CodeUnsupportedProtocolVersion = -32022
)

// Message is one JSON-RPC 2.0 message as it appears on the wire: a request
// (ID and Method), a notification (Method, no ID) or a response (ID and
// Result or Error).
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// IsRequest reports whether m is a request: it has a method and an id.
func (m *Message) IsRequest() bool { return m.Method != "" && hasID(m.ID) }

// IsNotification reports whether m is a notification: a method and no id.
func (m *Message) IsNotification() bool { return m.Method != "" && !hasID(m.ID) }

// IsResponse reports whether m is a response: no method, a result or an
// error, and an id — which may be null only on an error, as JSON-RPC 2.0
// answers a request whose id could not be read (a parse error).
func (m *Message) IsResponse() bool {
	if m.Method != "" || (m.Result == nil && m.Error == nil) {
		return false
	}
	return hasID(m.ID) || (m.Error != nil && bytes.Equal(bytes.TrimSpace(m.ID), []byte("null")))
}

func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// ParseMessage decodes one frame into a Message. It fails for anything that
// is not a JSON object with "jsonrpc": "2.0" and the shape of a request, a
// notification or a response. Keys match exactly, as JSON-RPC spells them.
//
// It validates the frame once and then only slices the envelope's values
// out of a copy of it: params and result, which may be megabytes, are
// neither decoded nor scanned again.
func ParseMessage(frame []byte) (*Message, error) {
	if !json.Valid(frame) {
		var v any
		return nil, fmt.Errorf("mcptest: not JSON-RPC: %w", json.Unmarshal(frame, &v))
	}
	b := bytes.Clone(frame) // the Message must not alias the caller's buffer
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: not a JSON object")
	}
	var m Message
	var version, method, rpcErr json.RawMessage // decoded below: the last of duplicate keys wins
	i = skipSpace(b, i+1)
	for b[i] != '}' {
		keyEnd := valueEnd(b, i)
		key := b[i:keyEnd]
		i = skipSpace(b, keyEnd)
		i = skipSpace(b, i+1) // the ':'
		end := valueEnd(b, i)
		val := json.RawMessage(b[i:end:end])
		switch string(key) {
		case `"jsonrpc"`:
			version = val
		case `"id"`:
			m.ID = val
		case `"method"`:
			method = val
		case `"params"`:
			m.Params = val
		case `"result"`:
			m.Result = val
		case `"error"`:
			rpcErr = val
		}
		i = skipSpace(b, end)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if method != nil {
		if err := json.Unmarshal(method, &m.Method); err != nil {
			return nil, fmt.Errorf("mcptest: not JSON-RPC: method: %w", err)
		}
	}
	if rpcErr != nil {
		if err := json.Unmarshal(rpcErr, &m.Error); err != nil {
			return nil, fmt.Errorf("mcptest: not JSON-RPC: error: %w", err)
		}
	}
	if err := json.Unmarshal(version, &m.JSONRPC); version == nil || err != nil || m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: jsonrpc is %s, want \"2.0\"", orAbsent(version))
	}
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: neither request, notification nor response")
	}
	return &m, nil
}

func orAbsent(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	return string(v)
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value that starts at i in
// valid JSON b.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i // a number or a literal: up to the next delimiter
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

// stringEnd returns the index just past the JSON string that starts at i.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexAny(b[j:], `"\`)
		if k < 0 {
			return len(b)
		}
		j += k
		if b[j] == '"' {
			return j + 1
		}
		j += 2 // an escape: skip the backslash and the byte after it
	}
	return len(b)
}

// IntID returns m's id as an integer, and false if it is absent or not an
// integer (JSON-RPC also allows string ids).
func (m *Message) IntID() (int64, bool) {
	id := bytes.TrimSpace(m.ID)
	if !hasID(id) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the code and message, and the data if there is any.
func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("jsonrpc error %d: %s (data: %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Response is the server's answer to one request.
type Response struct {
	ID     int64
	Result json.RawMessage // nil when Error is set
	Error  *RPCError
	Late   bool // arrived after the request was cancelled
}
