package proxy

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// DefaultRedactKeys are the words that make an object key look secret: a
// value whose key contains one of them (ASCII case-insensitive) is
// redacted, except the keys in redactExempt, which MCP itself uses.
var DefaultRedactKeys = []string{
	"password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
	"authorization", "auth", "cookie", "credential", "private", "session",
}

// redactExempt are keys that contain a secret-looking word but are MCP's
// own vocabulary, needed to follow a session.
var redactExempt = []string{"progressToken", "maxTokens"}

// redactPolicy says which values to redact: by key word, or by JSON path
// from the message root ("params.arguments.query"; "*" matches any one key
// or array index).
type redactPolicy struct {
	keys  [][]byte   // lower-case words
	paths [][]string // patterns, split at "."
}

func newRedactPolicy(keys, paths []string) (*redactPolicy, error) {
	p := &redactPolicy{}
	for _, k := range keys {
		if k == "" {
			continue
		}
		p.keys = append(p.keys, []byte(strings.ToLower(k)))
	}
	for _, s := range paths {
		if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
			return nil, fmt.Errorf("proxy: redact path %q: want dot-separated keys such as params.arguments.query", s)
		}
		p.paths = append(p.paths, strings.Split(s, "."))
	}
	return p, nil
}

func (p *redactPolicy) keyMatches(key []byte) bool {
	if len(p.keys) == 0 {
		return false
	}
	for _, ex := range redactExempt {
		if string(key) == ex {
			return false
		}
	}
	var low [maxKey]byte
	l := low[:0]
	for _, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		l = append(l, c)
	}
	for _, k := range p.keys {
		if bytes.Contains(l, k) {
			return true
		}
	}
	return false
}

// maxKey is the longest object key the redactor keeps for matching; a
// longer key is matched on its first maxKey bytes.
const maxKey = 128

// maxDepth is the deepest nesting whose path the redactor follows; deeper
// values are still redacted by key word, not by path.
const maxDepth = 64

type redactLevel struct {
	array bool
	index int
	key   []byte
}

// redactor rewrites one JSON text at a time, streamed through write in any
// pieces, replacing redacted values with Redacted and passing everything
// else through unchanged. It never validates and never fails: on text that
// is not JSON it passes bytes through as it sees them. Memory is constant:
// a stack of at most maxDepth levels and keys of at most maxKey bytes.
type redactor struct {
	pol  *redactPolicy
	emit func([]byte)

	stack    []redactLevel
	depth    int  // true nesting depth, may exceed len(stack)
	inStr    bool // inside a string
	esc      bool
	isKey    bool // the string being read is an object key
	expect   byte // 'k' key, ':' colon, 'v' value, ',' comma or close
	key      []byte
	lastKey  []byte // the key whose value comes next
	inScalar bool   // inside a number or literal

	skip       bool // inside a redacted value
	skipDepth  int  // depth at which the redacted value began
	skipScalar bool // the redacted value is a string, number or literal
	count      int  // values redacted in this text
}

func newRedactor(pol *redactPolicy, emit func([]byte)) *redactor {
	return &redactor{pol: pol, emit: emit, stack: make([]redactLevel, 0, 8), key: make([]byte, 0, maxKey), expect: 'v'}
}

// reset prepares for the next text.
func (r *redactor) reset() {
	r.stack = r.stack[:0]
	r.depth = 0
	r.inStr, r.esc, r.isKey, r.inScalar, r.skip = false, false, false, false, false
	r.expect = 'v'
	r.key = r.key[:0]
	r.lastKey = r.lastKey[:0]
	r.count = 0
}

// redactHere reports whether the value about to start is redacted.
func (r *redactor) redactHere() bool {
	if r.depth == 0 {
		return false
	}
	top := len(r.stack) == r.depth
	if top && !r.stack[r.depth-1].array && r.pol.keyMatches(r.lastKey) {
		return true
	}
	if !top {
		return false
	}
	for _, pat := range r.pol.paths {
		if len(pat) != r.depth {
			continue
		}
		ok := true
		for i, seg := range pat {
			if seg == "*" {
				continue
			}
			l := r.stack[i]
			if l.array {
				if n, err := strconv.Atoi(seg); err != nil || n != l.index {
					ok = false
				}
			} else if string(l.key) != seg {
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// write feeds p. Bytes that pass unchanged are emitted as sub-slices of p.
func (r *redactor) write(p []byte) {
	pass := 0 // start of the bytes not yet emitted (or skipped)
	for i := 0; i < len(p); i++ {
		c := p[i]
		if r.inStr {
			if !r.esc && !r.isKey {
				// Fast path through string contents.
				j := bytes.IndexByte(p[i:], '"')
				if j < 0 {
					j = len(p) - i
				}
				if k := bytes.IndexByte(p[i:i+j], '\\'); k >= 0 {
					j = k
				}
				if i+j == len(p) {
					break
				}
				i += j
				c = p[i]
			}
			if r.strByte(c) && r.skip && r.skipScalar && r.depth == r.skipDepth {
				r.skip = false // the redacted string ended here
				pass = i + 1
				continue
			}
			if r.skip {
				pass = i + 1
			}
			continue
		}
		if r.inScalar {
			if !isDelim(c) {
				if r.skip {
					pass = i + 1
				}
				continue
			}
			r.inScalar = false
			r.expect = ','
			if r.skip && r.skipScalar && r.depth == r.skipDepth {
				r.skip = false // the redacted number or literal ended before c
				pass = i
			}
		}
		switch c {
		case ' ', '\t', '\r', '\n':
		case '"':
			if r.expect == 'k' {
				r.inStr, r.isKey, r.key = true, true, r.key[:0]
				break
			}
			r.startValue(p, &pass, i, true)
			r.inStr = true
		case '{', '[':
			r.startValue(p, &pass, i, false)
			r.depth++
			if r.depth <= maxDepth {
				r.stack = append(r.stack, redactLevel{array: c == '['})
			}
			r.expect = 'v'
			if c == '{' {
				r.expect = 'k'
			}
		case '}', ']':
			if r.depth > 0 {
				if len(r.stack) == r.depth {
					r.stack = r.stack[:len(r.stack)-1]
				}
				r.depth--
			}
			r.expect = ','
			if r.skip && !r.skipScalar && r.depth == r.skipDepth {
				r.skip = false // the redacted object or array ended here
				pass = i + 1
				continue
			}
		case ':':
			r.expect = 'v'
		case ',':
			r.expect = 'v'
			if r.depth > 0 && len(r.stack) == r.depth {
				if l := &r.stack[r.depth-1]; l.array {
					l.index++
				} else {
					r.expect = 'k'
				}
			}
		default: // a number or a literal begins
			r.startValue(p, &pass, i, true)
			r.inScalar = true
		}
		if r.skip {
			pass = i + 1
		}
	}
	if r.skip {
		return
	}
	if pass < len(p) {
		r.emit(p[pass:])
	}
}

// startValue begins a value at p[i], redacting it if the policy says so:
// what passed before it is emitted, then Redacted in its place.
func (r *redactor) startValue(p []byte, pass *int, i int, scalar bool) {
	if r.skip || !r.redactHere() {
		return
	}
	if i > *pass {
		r.emit(p[*pass:i])
	}
	r.emit(redactedBytes)
	r.count++
	r.skip, r.skipDepth, r.skipScalar = true, r.depth, scalar
}

var redactedBytes = []byte(record.Redacted)

// strByte takes one byte of a string that the fast path stopped at (a quote,
// a backslash, an escaped byte, or any byte of a key) and reports whether
// a value string ended with it.
func (r *redactor) strByte(c byte) bool {
	switch {
	case r.esc:
		r.esc = false
	case c == '\\':
		r.esc = true
	case c == '"':
		r.inStr = false
		if !r.isKey {
			r.expect = ','
			return true
		}
		r.isKey = false
		r.lastKey = append(r.lastKey[:0], r.key...)
		if r.depth > 0 && len(r.stack) == r.depth {
			l := &r.stack[r.depth-1]
			l.key = append(l.key[:0], r.key...)
		}
		r.expect = ':'
		return false
	}
	if r.isKey && len(r.key) < maxKey {
		r.key = append(r.key, c)
	}
	return false
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\r', '\n', '"', '{', '[':
		return true
	}
	return false
}
