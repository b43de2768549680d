package proxy

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/internal/jsonstr"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// DefaultRedactKeys are the words that make an object key look secret: a
// value whose key contains one of them is redacted, except the keys
// progressToken and maxTokens, MCP's own vocabulary, needed to follow a
// session. Keys are matched as JSON decodes them ("pass\u0077ord" is
// "password") and in any case (Unicode case folding), at any depth.
var DefaultRedactKeys = []string{
	"password", "passwd", "secret", "token", "apikey", "api_key", "api-key",
	"authorization", "auth", "bearer", "cookie", "credential", "private", "session",
}

// redactExempt are keys that contain a secret-looking word but are MCP's
// own vocabulary, needed to follow a session.
var redactExempt = []string{"progressToken", "maxTokens"}

// redactPolicy says which values to redact: by key word, or by JSON path
// from the message root (wire.Path: "params.arguments.query"; "*" matches
// any one key or array index).
type redactPolicy struct {
	keys  [][]byte // lower-case words
	paths []wire.Path
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
		path, err := wire.ParsePath(s)
		if err != nil {
			return nil, fmt.Errorf("proxy: redact %w", err)
		}
		p.paths = append(p.paths, path)
	}
	return p, nil
}

// keyMatches reports whether a decoded key holds one of the words.
func (p *redactPolicy) keyMatches(key []byte) bool {
	if len(p.keys) == 0 {
		return false
	}
	for _, ex := range redactExempt {
		if string(key) == ex {
			return false
		}
	}
	if !isASCII(key) {
		for _, k := range p.keys {
			if wire.ContainsFold(string(key), string(k)) {
				return true
			}
		}
		return false
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

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// maxKey is the longest object key the redactor keeps for matching; a
// longer key is matched on its first maxKey bytes.
const maxKey = 128

// maxDepth is the deepest nesting whose path the redactor follows; deeper
// values are still redacted by key word (up to maxKinds levels), not by
// path.
const maxDepth = 64

// maxKinds is the deepest nesting whose kind (object or array) the
// redactor keeps, one bit a level (8 KiB): beyond it, keys are not told
// from values, and nothing is redacted by key word.
const maxKinds = 1 << 16

type redactLevel struct {
	array bool
	index int
	key   []byte
}

// redactor rewrites one JSON text at a time, streamed through write in any
// pieces, replacing redacted values with Redacted and passing everything
// else through unchanged. It never validates and never fails: on text that
// is not JSON it passes bytes through as it sees them. Memory is constant:
// a stack of at most maxDepth levels, keys of at most maxKey bytes, and a
// bit per level up to maxKinds.
type redactor struct {
	pol  *redactPolicy
	emit func([]byte)

	stack    []redactLevel
	deep     []uint64 // the kinds of the levels past maxDepth: bit set for an array
	depth    int      // true nesting depth, may exceed len(stack)
	inStr    bool     // inside a string
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

	// deepPlain: the last write was all string contents, with no quote or
	// backslash, of a string nested at depth 2 or more, in a text that
	// has had no unmatched closer (where a depth count that goes below
	// zero, as wire.Scanner's does, would differ from this one): nothing
	// in it can concern the top level.
	deepPlain bool
	unmatched bool // a closer came at depth 0
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
	r.deepPlain, r.unmatched = false, false
}

// inArray reports whether the current level is an array; known is false
// at the top and past maxKinds levels.
func (r *redactor) inArray() (array, known bool) {
	switch d := r.depth; {
	case d == 0:
		return false, false
	case d <= len(r.stack):
		return r.stack[d-1].array, true
	case d-maxDepth <= maxKinds:
		i := d - maxDepth - 1
		return r.deep[i/64]&(1<<(i%64)) != 0, true
	}
	return false, false
}

// push enters a level of the kind c opens.
func (r *redactor) push(c byte) {
	r.depth++
	switch d := r.depth; {
	case d <= maxDepth:
		r.stack = append(r.stack, redactLevel{array: c == '['})
	case d-maxDepth <= maxKinds:
		i := d - maxDepth - 1
		if i/64 >= len(r.deep) {
			r.deep = append(r.deep, 0)
		}
		if c == '[' {
			r.deep[i/64] |= 1 << (i % 64)
		} else {
			r.deep[i/64] &^= 1 << (i % 64)
		}
	}
}

// member is the top-level member the text is in now: its key, "" at the
// top level itself or past maxDepth's reach.
func (r *redactor) member() string {
	if r.depth == 0 || len(r.stack) == 0 || r.stack[0].array {
		return ""
	}
	return string(r.stack[0].key)
}

// pop leaves the level a closer ends; one at depth 0 is unmatched.
func (r *redactor) pop() {
	if r.depth == 0 {
		r.unmatched = true
		return
	}
	if len(r.stack) == r.depth {
		r.stack = r.stack[:len(r.stack)-1]
	}
	r.depth--
}

// redactHere reports whether the value about to start is redacted.
func (r *redactor) redactHere() bool {
	if r.depth == 0 {
		return false
	}
	if array, known := r.inArray(); known && !array && r.pol.keyMatches(r.lastKey) {
		return true
	}
	if len(r.stack) != r.depth {
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
	r.deepPlain = false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if r.inStr {
			var end bool
			from := i
			if i, end = r.inString(p, i, &pass); end {
				r.deepPlain = from == 0 && r.depth >= 2 && !r.unmatched
				break
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
			r.push(c)
			r.expect = 'v'
			if c == '{' {
				r.expect = 'k'
			}
		case '}', ']':
			r.pop()
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
			if array, known := r.inArray(); known && !array {
				r.expect = 'k'
			} else if known && len(r.stack) == r.depth {
				r.stack[r.depth-1].index++
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

// inString takes the string bytes from p[i], skipping through contents
// to the next byte that matters; it returns the index of the byte it took,
// or end when p ran out first. pass moves past what a redacted value
// skips.
func (r *redactor) inString(p []byte, i int, pass *int) (at int, end bool) {
	c := p[i]
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
			return i, true
		}
		i += j
		c = p[i]
	}
	if r.strByte(c) && r.skip && r.skipScalar && r.depth == r.skipDepth {
		r.skip = false // the redacted string ended here
		*pass = i + 1
		return i, false
	}
	if r.skip {
		*pass = i + 1
	}
	return i, false
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
	if jsonstr.End(&r.esc, c) {
		r.inStr = false
		if !r.isKey {
			r.expect = ','
			return true
		}
		r.isKey = false
		if bytes.IndexByte(r.key, '\\') >= 0 {
			r.key = append(r.key[:0], wire.DecodeKey(r.key)...) // as JSON decodes it
		}
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
