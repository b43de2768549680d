package agentconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// jsonValue is a JSON value and where it is in the text: what an edit of
// the text needs, which encoding/json does not keep.
type jsonValue struct {
	kind       byte // '{', '[', '"', or '0' for a number, true, false or null
	start, end int  // the value's bytes: text[start:end]
	str        string
	members    []jsonMember // an object's, in order
	elems      []*jsonValue // an array's
}

// jsonMember is a member of an object: its key (the string's value) and
// where the key's opening quote is.
type jsonMember struct {
	key      string
	keyStart int
	val      *jsonValue
}

// member returns the last member named key (as JSON.parse keeps the last
// of duplicates) and its index, or nil and -1.
func (v *jsonValue) member(key string) (*jsonValue, int) {
	if v == nil || v.kind != '{' {
		return nil, -1
	}
	for i := len(v.members) - 1; i >= 0; i-- {
		if v.members[i].key == key {
			return v.members[i].val, i
		}
	}
	return nil, -1
}

// jsonSyntax is what a host's JSON reader accepts beyond JSON.
type jsonSyntax struct {
	comments       bool // "//" to the end of the line, and "/* */"
	trailingCommas bool // a comma before "]" or "}"
}

func (s jsonSyntax) String() string {
	switch {
	case s.comments && s.trailingCommas:
		return "JSON with comments and trailing commas"
	case s.comments:
		return "JSON with comments (no trailing commas)"
	}
	return "JSON (no comments, no trailing commas)"
}

// maxDepth bounds the nesting the parser follows, so that no input can
// exhaust the stack.
const maxDepth = 1000

// SyntaxError is a file that is not what its host reads: where (line and
// column, from 1, the column in bytes) and what.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

type jsonParser struct {
	text   []byte
	pos    int
	syntax jsonSyntax
	depth  int
}

// parseJSON parses text, which must hold one JSON value and nothing else
// but whitespace (and, as syntax allows, comments); a UTF-8 byte order mark
// before it is skipped. The error is a *SyntaxError.
func parseJSON(text []byte, syntax jsonSyntax) (*jsonValue, error) {
	p := &jsonParser{text: text, syntax: syntax}
	if bytes.HasPrefix(text, []byte("\ufeff")) {
		p.pos = 3
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	if err := p.space(); err != nil {
		return nil, err
	}
	if p.pos < len(p.text) {
		return nil, p.errorf("unexpected %s after the JSON value", p.what())
	}
	return v, nil
}

// errorf returns a *SyntaxError at the current position.
func (p *jsonParser) errorf(format string, args ...any) error {
	return p.errorAt(p.pos, format, args...)
}

func (p *jsonParser) errorAt(pos int, format string, args ...any) error {
	line := 1 + bytes.Count(p.text[:pos], []byte("\n"))
	col := pos - bytes.LastIndexByte(p.text[:pos], '\n')
	return &SyntaxError{Line: line, Column: col, Msg: fmt.Sprintf(format, args...)}
}

// what names the byte at the current position for an error.
func (p *jsonParser) what() string {
	if p.pos >= len(p.text) {
		return "end of file"
	}
	return fmt.Sprintf("%q", p.text[p.pos])
}

// space skips whitespace and, if allowed, comments.
func (p *jsonParser) space() error {
	for p.pos < len(p.text) {
		switch c := p.text[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '/' && p.pos+1 < len(p.text) && (p.text[p.pos+1] == '/' || p.text[p.pos+1] == '*'):
			if !p.syntax.comments {
				return p.errorf("a comment, which this file's host does not accept (it reads %s)", p.syntax)
			}
			if p.text[p.pos+1] == '/' {
				if i := bytes.IndexByte(p.text[p.pos:], '\n'); i >= 0 {
					p.pos += i + 1
				} else {
					p.pos = len(p.text)
				}
				continue
			}
			i := bytes.Index(p.text[p.pos+2:], []byte("*/"))
			if i < 0 {
				return p.errorf("a comment that is never closed (no */)")
			}
			p.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

func (p *jsonParser) value() (*jsonValue, error) {
	if p.pos >= len(p.text) {
		return nil, p.errorf("unexpected end of file: want a value")
	}
	switch c := p.text[p.pos]; c {
	case '{', '[':
		p.depth++
		defer func() { p.depth-- }()
		if p.depth > maxDepth {
			return nil, p.errorf("nested more than %d deep", maxDepth)
		}
		if c == '{' {
			return p.object()
		}
		return p.array()
	case '"':
		return p.string()
	}
	return p.literal()
}

func (p *jsonParser) object() (*jsonValue, error) {
	v := &jsonValue{kind: '{', start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == '}' {
			if len(v.members) > 0 && !p.syntax.trailingCommas {
				return nil, p.errorf("a trailing comma before }, which this file's host does not accept (it reads %s)", p.syntax)
			}
			break
		}
		if p.pos >= len(p.text) || p.text[p.pos] != '"' {
			return nil, p.errorf("unexpected %s: want a member's name in double quotes", p.what())
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos >= len(p.text) || p.text[p.pos] != ':' {
			return nil, p.errorf("unexpected %s after the name %q: want ':'", p.what(), key.str)
		}
		p.pos++
		if err := p.space(); err != nil {
			return nil, err
		}
		val, err := p.value()
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, jsonMember{key: key.str, keyStart: key.start, val: val})
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos >= len(p.text) || p.text[p.pos] != '}' {
			return nil, p.errorf("unexpected %s in an object: want ',' or '}'", p.what())
		}
		break
	}
	p.pos++
	v.end = p.pos
	return v, nil
}

func (p *jsonParser) array() (*jsonValue, error) {
	v := &jsonValue{kind: '[', start: p.pos}
	p.pos++
	for {
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == ']' {
			if len(v.elems) > 0 && !p.syntax.trailingCommas {
				return nil, p.errorf("a trailing comma before ], which this file's host does not accept (it reads %s)", p.syntax)
			}
			break
		}
		elem, err := p.value()
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, elem)
		if err := p.space(); err != nil {
			return nil, err
		}
		if p.pos < len(p.text) && p.text[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.pos >= len(p.text) || p.text[p.pos] != ']' {
			return nil, p.errorf("unexpected %s in an array: want ',' or ']'", p.what())
		}
		break
	}
	p.pos++
	v.end = p.pos
	return v, nil
}

// string scans a string to its closing quote; encoding/json checks and
// decodes it (escapes, control characters).
func (p *jsonParser) string() (*jsonValue, error) {
	start := p.pos
	i := p.pos + 1
	for ; i < len(p.text) && p.text[i] != '"'; i++ {
		if p.text[i] == '\\' {
			i++
		}
	}
	if i >= len(p.text) {
		return nil, p.errorAt(start, "a string that is never closed")
	}
	v := &jsonValue{kind: '"', start: start, end: i + 1}
	if err := json.Unmarshal(p.text[start:i+1], &v.str); err != nil {
		return nil, p.errorAt(start, "not a JSON string: %v", err)
	}
	p.pos = i + 1
	return v, nil
}

// literal scans a number, true, false or null; encoding/json checks it.
func (p *jsonParser) literal() (*jsonValue, error) {
	start := p.pos
	for p.pos < len(p.text) && bytes.IndexByte([]byte("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), p.text[p.pos]) >= 0 {
		p.pos++
	}
	if p.pos == start || !json.Valid(p.text[start:p.pos]) {
		p.pos = start
		return nil, p.errorf("unexpected %s: want a value", p.what())
	}
	return &jsonValue{kind: '0', start: start, end: p.pos}, nil
}
