package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// parseValid slices the envelope out of b into m: b is valid JSON whose
// top-level members validTop found in mem.
func parseValid(b []byte, mem *members, m *Message) error {
	i := skipSpace(b, 0)
	switch b[i] {
	case '{':
	case '[':
		return fmt.Errorf("wire: not JSON-RPC: %w", ErrBatch)
	default:
		return fmt.Errorf("wire: not JSON-RPC: not a JSON object")
	}
	var version, method, rpcErr json.RawMessage
	var seen [6]bool
	spans := mem.s[:mem.n]
	if mem.over {
		spans = walkMembers(b, skipSpace(b, i+1))
	}
	for _, sp := range spans {
		key := b[sp.k0:sp.k1]
		val := json.RawMessage(b[sp.v0:sp.v1:sp.v1])
		k := envelopeKey(key)
		if k < 0 && len(key) >= 2 && bytes.IndexByte(key, '\\') >= 0 {
			k = envelopeKey([]byte(`"` + DecodeKey(key[1:len(key)-1]) + `"`)) // as JSON decodes it: "\u0069d" is "id"
		}
		switch k {
		case 0:
			version = val
		case 1:
			m.ID = val
		case 2:
			method = val
		case 3:
			m.Params = val
		case 4:
			m.Result = val
		case 5:
			rpcErr = val
		}
		if k >= 0 {
			if seen[k] {
				return fmt.Errorf("wire: not JSON-RPC: %w %s", ErrDuplicateKey, key)
			}
			seen[k] = true
		}
	}
	if method != nil {
		var err error
		if m.Method, err = decodeString(method); err != nil {
			return fmt.Errorf("wire: not JSON-RPC: method: %w", err)
		}
	}
	if rpcErr != nil {
		if err := json.Unmarshal(rpcErr, &m.Error); err != nil {
			return fmt.Errorf("wire: not JSON-RPC: error: %w", err)
		}
	}
	if string(version) != `"2.0"` { // a constant: compared in place
		if v, err := decodeString(version); version == nil || err != nil || v != "2.0" {
			return fmt.Errorf("wire: not JSON-RPC: jsonrpc is %s, want \"2.0\"", orAbsent(version))
		}
	}
	m.JSONRPC = "2.0"
	if m.Method == "" && !m.IsResponse() { // with a method it is a request or a notification
		return fmt.Errorf("wire: not JSON-RPC: neither request, notification nor response")
	}
	return nil
}

// envelopeKey numbers the envelope's keys as written, quotes included
// (jsonrpc 0, id 1, method 2, params 3, result 4, error 5), or returns -1.
// A key with an escape matches none: parseValid decodes it first.
func envelopeKey(key []byte) int {
	switch string(key) { // no copy: the compiler compares in place
	case `"jsonrpc"`:
		return 0
	case `"id"`:
		return 1
	case `"method"`:
		return 2
	case `"params"`:
		return 3
	case `"result"`:
		return 4
	case `"error"`:
		return 5
	}
	return -1
}

// walkMembers finds the members of the valid JSON object whose first key
// (or closing brace) is at i, for an object with more members than
// validTop records.
func walkMembers(b []byte, i int) []span {
	var spans []span
	for b[i] != '}' {
		k1 := valueEnd(b, i)
		v0 := skipSpace(b, skipSpace(b, k1)+1) // past the ':'
		v1 := valueEnd(b, v0)
		spans = append(spans, span{i, k1, v0, v1})
		i = skipSpace(b, v1)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return spans
}

// decodeString decodes a valid JSON value that should be a string, without
// reflection when it has no escapes.
func decodeString(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' {
		if m, ok := knownMethod(raw[1 : n-1]); ok {
			return m, nil
		}
	}
	// encoding/json also replaces invalid UTF-8 with U+FFFD.
	if n := len(raw); n >= 2 && raw[0] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : n-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// knownMethod returns the constant for a method name this package names,
// so that the methods of a flood cost no allocation each.
func knownMethod(b []byte) (string, bool) {
	switch string(b) {
	case MethodProgress:
		return MethodProgress, true
	case MethodMessage:
		return MethodMessage, true
	case MethodCancelled:
		return MethodCancelled, true
	case MethodPing:
		return MethodPing, true
	case MethodToolsCall:
		return MethodToolsCall, true
	case MethodToolsList:
		return MethodToolsList, true
	case MethodInitialize:
		return MethodInitialize, true
	case MethodInitialized:
		return MethodInitialized, true
	case MethodDiscover:
		return MethodDiscover, true
	}
	return "", false
}

func orAbsent(v json.RawMessage) string {
	if v == nil {
		return "absent"
	}
	return string(v)
}
