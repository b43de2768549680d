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
// notification or a response.
func ParseMessage(frame []byte) (*Message, error) {
	var m Message
	if err := json.Unmarshal(frame, &m); err != nil {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: %w", err)
	}
	if m.JSONRPC != "2.0" {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: jsonrpc is %q, want \"2.0\"", m.JSONRPC)
	}
	if !m.IsRequest() && !m.IsNotification() && !m.IsResponse() {
		return nil, fmt.Errorf("mcptest: not JSON-RPC: neither request, notification nor response")
	}
	return &m, nil
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
