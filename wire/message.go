package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/mcpstdio/mcpstdio/internal/term"
)

// Protocol revisions.
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

// IsModern reports whether protocol version v belongs to the stateless era
// (2026-07-28 or later): no handshake, _meta on every request.
func IsModern(v string) bool { return v >= Version20260728 }

// Method names.
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
// revision, and the progress token's key in any revision.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaProgressToken      = "progressToken"
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

// Errors that ParseMessage's error wraps, for the cases a caller treats
// apart from plain invalid JSON.
var (
	// ErrBatch: the frame is a JSON array, a JSON-RPC batch. MCP removed
	// batching in 2025-06-18, and no host built on this package sends one.
	ErrBatch = errors.New("a JSON-RPC batch (a JSON array)")
	// ErrDuplicateKey: the frame has an envelope member twice (see the
	// package documentation).
	ErrDuplicateKey = errors.New("duplicate key")
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

// hasID reports whether id is present and not null.
func hasID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	return len(id) > 0 && !bytes.Equal(id, []byte("null"))
}

// IntID returns m's id as an integer, and false if it is absent or not an
// integer written as one (JSON-RPC also allows string ids; 2.0 is not 2).
func (m *Message) IntID() (int64, bool) {
	id := bytes.TrimSpace(m.ID)
	if !hasID(id) {
		return 0, false
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return n, err == nil
}

// ParseMessage decodes one frame into a Message. It fails for anything that
// is not a JSON object with "jsonrpc": "2.0" and the shape of a request, a
// notification or a response. Keys match exactly, as JSON-RPC spells them;
// an envelope key given twice fails with an error wrapping ErrDuplicateKey,
// a batch with one wrapping ErrBatch.
//
// It validates the frame once (as encoding/json.Valid would, in one fast
// pass) and then only slices the envelope's values
// out of a copy of it: params and result, which may be megabytes, are
// neither decoded nor scanned again.
func ParseMessage(frame []byte) (*Message, error) {
	return parse(bytes.Clone(frame)) // the Message must not alias the caller's buffer
}

// ParseMessageInPlace is ParseMessage without the copy: the Message's raw
// fields (ID, Params, Result, Error.Data) alias frame, which the caller must
// neither change nor reuse while it uses them. It is for a reader that keeps
// only some parts of some messages and copies just those.
func ParseMessageInPlace(frame []byte) (*Message, error) {
	return parse(frame)
}

// ParseMessageInto is ParseMessageInPlace into m, which it overwrites: a
// reader that parses a flood reuses one Message and allocates nothing per
// frame. On error m is left zero.
func ParseMessageInto(m *Message, frame []byte) error {
	*m = Message{}
	var mem members
	if !validTop(frame, &mem) {
		return invalid(frame)
	}
	if err := parseValid(frame, &mem, m); err != nil {
		*m = Message{}
		return err
	}
	return nil
}

func parse(frame []byte) (*Message, error) {
	m := new(Message)
	if err := ParseMessageInto(m, frame); err != nil {
		return nil, err
	}
	return m, nil
}

func invalid(frame []byte) error {
	var v any
	return fmt.Errorf("wire: not JSON-RPC: %w", json.Unmarshal(frame, &v))
}

// Member returns the raw value of the top-level member key of the JSON
// object obj, or nil if obj is not an object or has no such member. obj
// must be valid JSON (as every part of a parsed Message is); nothing is
// decoded, so a large object costs one pass over its bytes. Of duplicate
// keys the last wins, as in encoding/json.
func Member(obj json.RawMessage, key string) json.RawMessage {
	start, end := MemberAt(obj, key)
	if start < 0 {
		return nil
	}
	return obj[start:end:end]
}

// MemberAt is Member giving the value's offsets in obj: obj[start:end] is
// the value; start is -1 when there is none.
func MemberAt(obj json.RawMessage, key string) (start, end int) {
	start, end = -1, -1
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return start, end
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] != '}' {
		keyEnd := valueEnd(obj, i)
		k := obj[i:keyEnd]
		i = skipSpace(obj, keyEnd)
		i = skipSpace(obj, i+1)
		e := valueEnd(obj, i)
		if len(k) == len(key)+2 && string(k[1:len(k)-1]) == key {
			start, end = i, e
		}
		i = skipSpace(obj, e)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return start, end
}

// skipSpace returns the index of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
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
// It looks for quotes with bytes.IndexByte (vectorized) and decides whether
// each is escaped by the run of backslashes before it: in valid JSON an odd
// run escapes the quote.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return len(b)
		}
		q += j
		k := q
		for k > i+1 && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
	return len(b)
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error returns the code and message, and the data if there is any, on
// one line: the peer's message is the peer's text, so its control
// characters (a newline, an escape sequence, a bidirectional override)
// are shown escaped (\n, \x1b, \u202e), never raw.
func (e *RPCError) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("jsonrpc error %d: %s (data: %s)", e.Code, term.Line(e.Message), term.Line(string(e.Data)))
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, term.Line(e.Message))
}
