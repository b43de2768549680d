package wire

import (
	"bytes"
	"strconv"
	"strings"
)

// edit replaces b[from:to] with with.
type edit struct {
	from, to int
	with     []byte
}

// rewriter applies rules to one JSON text, which may be cut short (a
// frame's head): it walks the text, finds the values the rules name, and
// returns the edits that make them, in order. Malformed text stops the
// walk where it goes wrong: what comes before is handled, nothing after.
// A value cut off by the end of the text is cut from the text when a rule
// names it (its hash would be of a part).
type rewriter struct {
	b       []byte
	rules   []Rule
	stack   []string // the path to the value being read: keys, and indexes as decimal
	inArray bool     // the value being read is an array element
	edits   []edit
	bad     bool // the text is malformed (or cut short): stop
}

// Rewrite returns the JSON text b with the rules applied (the first rule
// that names a value applies; the values inside it are not looked at),
// and whether anything changed. b may be cut short (a frame's head): a
// value a rule names that the cut leaves unfinished is cut from the text
// (its hash would be of a part). Malformed text stops the walk where it
// goes wrong: what comes before is rewritten, nothing after. Keys match as
// JSON decodes them.
func Rewrite(b []byte, rules []Rule) ([]byte, bool) {
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
func (w *rewriter) match() *Rule { return RuleAt(w.rules, w.stack) }

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
	var r *Rule
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
	switch r.Edit {
	case Hash:
		if !IsHashed(w.b[i:end]) {
			w.edits = append(w.edits, edit{from: i, to: end, with: Hashed(w.b[i:end])})
		}
		return end, false
	case Replace:
		if !bytes.Equal(w.b[i:end], r.With) {
			w.edits = append(w.edits, edit{from: i, to: end, with: r.With})
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
		key := DecodeKey(w.b[i+1 : kend-1])
		i = w.ws(kend)
		if i >= len(w.b) || w.b[i] != ':' {
			w.bad = true
			return i
		}
		i = w.ws(i + 1)
		i = w.visit(key, false, i, prev, start, &kept, skip)
		prev = i
		i = w.ws(i)
		first = false
	}
	return i
}

// visit handles the member or element at i, named seg on the path,
// counting it in kept unless it was dropped, and returns where it ends.
func (w *rewriter) visit(seg string, inArray bool, i, prev, start int, kept *int, skip bool) int {
	w.stack = append(w.stack, seg)
	w.inArray = inArray
	end, dropped := w.member(i, prev, start, *kept == 0, skip)
	if !dropped {
		*kept++
	}
	w.stack = w.stack[:len(w.stack)-1]
	return end
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
		i = w.visit(strconv.Itoa(n), true, i, prev, i, &kept, skip)
		prev = i
		i = w.ws(i)
	}
	return i
}
