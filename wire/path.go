package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Path names values in a JSON-RPC message from its root: object keys
// separated by dots ("params.arguments.query"), an array index as a number
// ("result.content.0.text"), "*" for any one key or index
// ("result.content.*.text"). Keys compare as JSON decodes them: a key
// written "\u0071uery" is "query".
type Path []string

// ParsePath parses a path written as above. It fails on an empty path or
// an empty segment.
func ParsePath(s string) (Path, error) {
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return nil, fmt.Errorf("path %q: want dot-separated keys such as params.arguments.query", s)
	}
	return strings.Split(s, "."), nil
}

// String returns the path as ParsePath reads it.
func (p Path) String() string { return strings.Join(p, ".") }

// Match reports whether p names the value at the path of keys and
// indexes (as decimal strings) from the message root.
func (p Path) Match(at []string) bool {
	if len(p) != len(at) {
		return false
	}
	for i, seg := range p {
		if seg != "*" && seg != at[i] {
			return false
		}
	}
	return true
}

// DecodeKey returns an object key as JSON decodes it, from its raw bytes
// between the quotes. A key cut short (the first bytes of a long key) is
// decoded up to its last whole escape; an invalid escape is kept as it is.
func DecodeKey(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		r, n := unescape(raw[i:])
		if n == 0 { // cut short
			break
		}
		if r < 0 {
			b.Write(raw[i : i+n])
		} else {
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// unescape decodes the escape at the start of b: the rune (-1 if the
// escape is invalid) and its length (0 if b ends inside it).
func unescape(b []byte) (rune, int) {
	if len(b) < 2 {
		return 0, 0
	}
	switch b[1] {
	case '"', '\\', '/':
		return rune(b[1]), 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
	default:
		return -1, 2
	}
	if len(b) < 6 {
		return 0, 0
	}
	v, err := strconv.ParseUint(string(b[2:6]), 16, 16)
	if err != nil {
		return -1, 6
	}
	r := rune(v)
	if r >= 0xd800 && r < 0xdc00 { // a surrogate pair's first half
		if len(b) < 12 && bytes.HasPrefix(b[6:], []byte(`\u`)[:min(2, len(b)-6)]) {
			return 0, 0
		}
		if len(b) >= 12 && b[6] == '\\' && b[7] == 'u' {
			if lo, err := strconv.ParseUint(string(b[8:12]), 16, 16); err == nil && lo >= 0xdc00 && lo < 0xe000 {
				return 0x10000 + (r-0xd800)<<10 + (rune(lo) - 0xdc00), 12
			}
		}
		return utf8.RuneError, 6
	}
	if r >= 0xdc00 && r < 0xe000 {
		return utf8.RuneError, 6
	}
	return r, 6
}

// ContainsFold reports whether s contains word, compared with Unicode
// case folding ("ToKen", "TOKEN" and "toKen" with a Kelvin sign all hold
// "token").
func ContainsFold(s, word string) bool {
	if word == "" {
		return true
	}
	for i := range s {
		if hasPrefixFold(s[i:], word) {
			return true
		}
	}
	return false
}

func hasPrefixFold(s, prefix string) bool {
	for _, w := range prefix {
		if s == "" {
			return false
		}
		r, n := utf8.DecodeRuneInString(s)
		if r != w && !foldEqual(r, w) {
			return false
		}
		s = s[n:]
	}
	return true
}

func foldEqual(a, b rune) bool {
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// Edit is what a Rule does to the values its path names.
type Edit int

// Edits of a Rule.
const (
	// Hash replaces a value with the JSON string "sha256:" and 16 hex
	// digits of its bytes' SHA-256, so that equal values stay equal; a
	// value that already has that form is left as it is.
	Hash Edit = iota
	// Drop removes an object member, or makes an array element null (so
	// that the others keep their places and paths).
	Drop
	// Replace replaces a value with Rule.With.
	Replace
)

// Rule is a path and what to do with the values it names.
type Rule struct {
	Path Path
	Edit Edit
	With json.RawMessage // for Replace
}

// HashPrefix starts every hashed value.
const HashPrefix = "sha256:"

// hashLen is how many hex digits of the SHA-256 a hashed value keeps:
// enough to tell values apart in a recording, not to be a fingerprint.
const hashLen = 16

// Hashed returns the Hash of a JSON value: a JSON string.
func Hashed(v []byte) []byte {
	sum := sha256.Sum256(v)
	return []byte(`"` + HashPrefix + hex.EncodeToString(sum[:])[:hashLen] + `"`)
}

// IsHashed reports whether v is already a hashed value.
func IsHashed(v []byte) bool {
	return len(v) == len(HashPrefix)+hashLen+2 && bytes.HasPrefix(v, []byte(`"`+HashPrefix))
}

// RuleAt returns the first rule that names the value at path at, or nil.
func RuleAt(rules []Rule, at []string) *Rule {
	for i := range rules {
		if rules[i].Path.Match(at) {
			return &rules[i]
		}
	}
	return nil
}
