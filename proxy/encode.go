package proxy

import (
	"encoding/json"
	"strconv"

	"github.com/mcpstdio/mcpstdio/record"
)

// The record's most frequent events, a chunk event per chunk and a frame
// event per line, are encoded here without reflection, byte for byte as
// json.Marshal encodes them (chunk_test.go holds them to it); anything
// else, and a frame whose strings are not plain ASCII, goes by
// json.Marshal.

// appendChunk encodes a chunk event that has no bodies (only Dir, Off, N,
// T, WT, Reads and Gap set). Dir is one of the record.Dir constants.
func appendChunk(b []byte, e *record.Event) []byte {
	b = appendHead(b, e, record.EvChunk)
	if e.Dir != "" {
		b = append(append(append(b, `,"dir":"`...), e.Dir...), '"')
	}
	b = appendInt(b, "off", e.Off)
	b = appendInt(b, "n", e.N)
	b = appendInt(b, "wt", e.WT)
	b = appendInt(b, "reads", int64(e.Reads))
	if e.Gap {
		b = append(b, `,"gap":true`...)
	}
	return append(b, '}')
}

// appendHead opens an event of kind ev: its sequence number and time.
func appendHead(b []byte, e *record.Event, ev string) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"t":`...)
	b = strconv.AppendInt(b, e.T, 10)
	return append(append(append(b, `,"ev":"`...), ev...), '"')
}

// appendFrame encodes a frame event: only the fields frameAsm.frame and
// frameDone set. It reports false, with b unchanged, when a string or raw
// value is not one json.Marshal would write as it is (non-ASCII, control
// bytes, white space in a raw value).
func appendFrame(b []byte, e *record.Event) ([]byte, bool) {
	if e.Ev != record.EvFrame {
		return b, false
	}
	for _, s := range [...]string{e.Dir, e.Kind, e.Method, e.Tool, e.Head, e.Hash} {
		if !plainString(s) {
			return b, false
		}
	}
	if !plainRaw(e.ID) || !plainRaw(e.Token) {
		return b, false
	}
	b = appendHead(b, e, record.EvFrame)
	b = appendStr(b, "dir", e.Dir)
	b = appendInt(b, "off", e.Off)
	b = appendInt(b, "n", e.N)
	b = appendInt(b, "t0", e.T0)
	b = appendStr(b, "kind", e.Kind)
	b = appendRaw(b, "id", e.ID)
	b = appendStr(b, "method", e.Method)
	b = appendStr(b, "tool", e.Tool)
	b = appendRaw(b, "token", e.Token)
	b = appendInt(b, "code", e.Code)
	b = appendStr(b, "head", e.Head)
	b = appendStr(b, "hash", e.Hash)
	b = appendInt(b, "redacted", int64(e.Redacted))
	for _, f := range [...]struct {
		name string
		v    bool
	}{{"crlf", e.CRLF}, {"unterminated", e.Unterminated}, {"gap", e.Gap}, {"scanned", e.Scanned}} {
		if f.v {
			b = append(append(append(b, `,"`...), f.name...), `":true`...)
		}
	}
	return append(b, '}'), true
}

// plainString reports whether json.Marshal writes s as printable ASCII
// with at most the escapes appendStr makes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// plainRaw reports whether json.Marshal writes raw as it is: printable
// ASCII without white space or the bytes it escapes for HTML.
func plainRaw(raw json.RawMessage) bool {
	for _, c := range raw {
		if c <= 0x20 || c > 0x7e || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

func appendInt(b []byte, name string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(append(append(b, ',', '"'), name...), '"', ':'), v, 10)
}

func appendRaw(b []byte, name string, v json.RawMessage) []byte {
	if len(v) == 0 {
		return b
	}
	return append(append(append(append(b, ',', '"'), name...), '"', ':'), v...)
}

// appendStr appends a plain string (plainString) as json.Marshal does:
// quote and backslash escaped, and <, > and & as \u003c, \u003e, \u0026.
func appendStr(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(append(append(b, ',', '"'), name...), '"', ':', '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '<', '>', '&':
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
