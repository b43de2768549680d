package wire

import (
	"bytes"
	"encoding/json"
)

// Key returns a canonical form of a small JSON value, such as an id or a
// progress token, for comparing two values as JSON: two encodings of the
// same value ("a&b" and "a\u0026b", or with spaces around) give the same
// key, and values of different JSON types never do (1 and "1"). It returns
// "" for an empty value, null or invalid JSON.
//
// The common case, a string without escapes or an integer, is its own key
// (Key returns string(raw) without surrounding spaces) and costs no
// decoding; only values with escapes or structure are decoded and
// re-encoded.
func Key(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"' && len(raw) >= 2 && raw[len(raw)-1] == '"' && bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 && bytes.IndexByte(raw[1:len(raw)-1], '"') < 0:
		return string(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		if plainInteger(raw) {
			return string(raw)
		}
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil || v == nil || d.More() {
		return ""
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return ""
	}
	return string(bytes.TrimSpace(b.Bytes()))
}

func plainInteger(b []byte) bool {
	if b[0] == '-' {
		b = b[1:]
	}
	if len(b) == 0 || (b[0] == '0' && len(b) > 1) {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
