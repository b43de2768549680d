package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// A path names values in a JSON-RPC message, from its root, as the proxy's
// -redact does: keys separated by dots ("params.arguments.query"), an
// array index as a number ("result.content.0.text"), "*" for any one key
// or index ("result.content.*.text").
type path []string

// rule is a path and what to do with the values it names.
type rule struct {
	p    path
	drop bool // remove the member (or element); else replace the value with its hash
}

func parsePath(s string) (path, error) {
	if s == "" || strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, "..") {
		return nil, fmt.Errorf("replay: path %q: want dot-separated keys such as params.arguments.query", s)
	}
	return strings.Split(s, "."), nil
}

// parseRules reads Redact's paths: "-" before a path drops, else hashes.
func parseRules(paths []string, drop bool) ([]rule, error) {
	var rs []rule
	for _, s := range paths {
		d := drop
		if rest, ok := strings.CutPrefix(s, "-"); ok {
			s, d = rest, true
		}
		p, err := parsePath(s)
		if err != nil {
			return nil, err
		}
		rs = append(rs, rule{p: p, drop: d})
	}
	return rs, nil
}

// hashPrefix starts every hashed value: a value that already has it is
// left as it is, so that redacting twice changes nothing.
const hashPrefix = "sha256:"

// hashLen is how many hex digits of the SHA-256 a hashed value keeps:
// enough to tell values apart in a recording, not to be a fingerprint.
const hashLen = 16

// hashed returns the replacement of a JSON value: a JSON string holding a
// hash of its bytes, so that equal values stay equal after redaction.
func hashed(v []byte) []byte {
	sum := sha256.Sum256(v)
	return []byte(`"` + hashPrefix + hex.EncodeToString(sum[:])[:hashLen] + `"`)
}

// isHashed reports whether v is already a hashed value.
func isHashed(v []byte) bool {
	return len(v) == len(hashPrefix)+hashLen+2 && bytes.HasPrefix(v, []byte(`"`+hashPrefix))
}

// edit replaces b[from:to] with with.
type edit struct {
	from, to int
	with     []byte
}

// rewriter applies rules to one JSON text, which may be cut short (a
// frame's head): it walks the text, finds the values the rules name, and
// returns the edits that redact them, in order. Malformed text stops the
// walk where it goes wrong: what comes before is handled, nothing after.
// A value cut off by the end of the text is cut from the text when a rule
// names it (its hash would be of a part).
type rewriter struct {
	b       []byte
	rules   []rule
	stack   []string // the path to the value being read: keys, and indexes as decimal
	inArray bool     // the value being read is an array element
	edits   []edit
	bad     bool // the text is malformed (or cut short): stop
}

// rewrite returns b with the rules applied, and whether anything changed.
func rewrite(b []byte, rules []rule) ([]byte, bool) {
	if len(rules) == 0 || len(b) == 0 {
		return b, false
	}
	w := &rewriter{b: b, rules: rules}
	w.value(w.ws(0), false)
	if len(w.edits) == 0 {
		return b, false
	}
	out := make([]byte, 0, len(b))
	at := 0
	for _, e := range w.edits {
		out = append(append(out, b[at:e.from]...), e.with...)
		at = e.to
	}
	return append(out, b[at:]...), true
}

func (w *rewriter) ws(i int) int {
	for i < len(w.b) && (w.b[i] == ' ' || w.b[i] == '\t' || w.b[i] == '\r' || w.b[i] == '\n') {
		i++
	}
	return i
}

// match returns the rule naming the current path, if one does.
func (w *rewriter) match() *rule {
	for i := range w.rules {
		r := &w.rules[i]
		if len(r.p) != len(w.stack) {
			continue
		}
		ok := true
		for j, seg := range r.p {
			if seg != "*" && seg != w.stack[j] {
				ok = false
				break
			}
		}
		if ok {
			return r
		}
	}
	return nil
}

// value reads the value at i and returns where it ends; skip reads it
// without looking for rules inside (it is being dropped or hashed).
func (w *rewriter) value(i int, skip bool) int {
	if i >= len(w.b) {
		w.bad = true
		return i
	}
	switch c := w.b[i]; {
	case c == '{':
		return w.object(i, skip)
	case c == '[':
		return w.array(i, skip)
	case c == '"':
		return w.str(i)
	default:
		j := i
		for j < len(w.b) && !strings.ContainsRune(",}] \t\r\n:", rune(w.b[j])) {
			j++
		}
		if j == i {
			w.bad = true
		}
		if j == len(w.b) && len(w.stack) > 0 {
			w.bad = true // a number cut off may go on
		}
		return j
	}
}

func (w *rewriter) str(i int) int {
	for j := i + 1; j < len(w.b); j++ {
		switch w.b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	w.bad = true
	return len(w.b)
}

// member handles the value at i (inside a container, its path on the
// stack): a rule that names it redacts it. prev is where the separator
// before the member begins (after the previous value), first whether it is
// the first member, start where the member itself begins (its key, or the
// element).
//
// It returns where the member ends and whether it was dropped.
func (w *rewriter) member(i, prev, start int, first, skip bool) (int, bool) {
	inArray := w.inArray // before the value's own members change it
	var r *rule
	if !skip {
		r = w.match()
	}
	end := w.value(i, skip || r != nil)
	if r == nil {
		return end, false
	}
	if w.bad {
		// Cut off inside a value a rule names: cut the text there.
		w.edits = append(w.edits, edit{from: i, to: len(w.b)})
		return end, false
	}
	if !r.drop {
		if !isHashed(w.b[i:end]) {
			w.edits = append(w.edits, edit{from: i, to: end, with: hashed(w.b[i:end])})
		}
		return end, false
	}
	if inArray {
		// An element keeps its place, so that the paths of the others
		// (and redacting again) still hold.
		w.edits = append(w.edits, edit{from: i, to: end, with: []byte("null")})
		return end, false
	}
	if !first {
		w.edits = append(w.edits, edit{from: prev, to: end})
		return end, true
	}
	// The first member kept goes with the separator after it, if there
	// is one.
	j := w.ws(end)
	if j < len(w.b) && w.b[j] == ',' {
		w.edits = append(w.edits, edit{from: start, to: w.ws(j + 1)})
		return j, true
	}
	w.edits = append(w.edits, edit{from: start, to: end})
	return end, true
}

func (w *rewriter) object(i int, skip bool) int {
	i = w.ws(i + 1)
	first, kept := true, 0
	prev := i
	for !w.bad {
		if i >= len(w.b) {
			w.bad = true
			return i
		}
		if w.b[i] == '}' {
			return i + 1
		}
		if !first {
			if w.b[i] != ',' {
				w.bad = true
				return i
			}
			i = w.ws(i + 1)
		}
		if i >= len(w.b) || w.b[i] != '"' {
			w.bad = true
			return i
		}
		start := i
		kend := w.str(i)
		if w.bad {
			return kend
		}
		key := string(w.b[i+1 : kend-1])
		if bytes.IndexByte(w.b[i+1:kend-1], '\\') >= 0 {
			if k, err := strconv.Unquote(string(w.b[i:kend])); err == nil {
				key = k
			}
		}
		i = w.ws(kend)
		if i >= len(w.b) || w.b[i] != ':' {
			w.bad = true
			return i
		}
		i = w.ws(i + 1)
		w.stack = append(w.stack, key)
		var dropped bool
		w.inArray = false
		i, dropped = w.member(i, prev, start, kept == 0, skip)
		if !dropped {
			kept++
		}
		w.stack = w.stack[:len(w.stack)-1]
		prev = i
		i = w.ws(i)
		first = false
	}
	return i
}

func (w *rewriter) array(i int, skip bool) int {
	i = w.ws(i + 1)
	prev, kept := i, 0
	for n := 0; !w.bad; n++ {
		if i >= len(w.b) {
			w.bad = true
			return i
		}
		if w.b[i] == ']' {
			return i + 1
		}
		if n > 0 {
			if w.b[i] != ',' {
				w.bad = true
				return i
			}
			i = w.ws(i + 1)
		}
		w.stack = append(w.stack, strconv.Itoa(n))
		var dropped bool
		w.inArray = true
		i, dropped = w.member(i, prev, i, kept == 0, skip)
		if !dropped {
			kept++
		}
		w.stack = w.stack[:len(w.stack)-1]
		prev = i
		i = w.ws(i)
	}
	return i
}

// mapOffset maps offset p of old to the same place in new, when new is
// old with one stretch changed (an id rewritten, a value redacted): bytes
// before the first difference keep their offset, bytes after the last
// keep their distance from the end, and an offset inside the changed
// stretch goes to its start. With several changes it is exact outside the
// stretch from the first to the last.
func mapOffset(old, new []byte, p int) int {
	pre := 0
	for pre < len(old) && pre < len(new) && old[pre] == new[pre] {
		pre++
	}
	if p <= pre {
		return p
	}
	suf := 0
	for suf < len(old)-pre && suf < len(new)-pre && old[len(old)-1-suf] == new[len(new)-1-suf] {
		suf++
	}
	if p >= len(old)-suf {
		return p - len(old) + len(new)
	}
	return pre
}
