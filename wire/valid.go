package wire

import (
	"encoding/binary"
	"math/bits"
)

// valid reports whether b is exactly one JSON value with optional space
// around it, by the rules of encoding/json.Valid (which it replaces on the
// host's hot path, where encoding/json's byte-at-a-time state machine cost
// half of the time a host spent on a flood): the same grammar, the same
// nesting limit, and, as there, no check that strings are valid UTF-8.
// Strings, most of a message's bytes, are crossed with a table lookup per
// byte; structure is followed with an explicit stack, so deep nesting
// costs no Go stack. The fuzz test holds it to encoding/json.Valid.
func valid(b []byte) bool { return validTop(b, nil) }

// span is where one top-level member of an object is: b[k0:k1] its key,
// quotes included, b[v0:v1] its value.
type span struct{ k0, k1, v0, v1 int }

// members are the top-level members validTop found, in order, so that the
// envelope is sliced out of the frame without a second pass over it; over
// reports more than fit.
type members struct {
	n    int
	over bool
	s    [8]span
}

// note records the key at b[k0:k1], whose value starts at v0.
func (m *members) note(k0, k1, v0 int) {
	if m.n == len(m.s) {
		m.over = true
		return
	}
	m.s[m.n] = span{k0, k1, v0, -1}
	m.n++
}

// validTop is valid, recording the members of a top-level object in m when
// m is not nil.
func validTop(b []byte, m *members) bool {
	var buf [64]byte
	stack := buf[:0] // '{' or '[' per open container
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		switch c := b[i]; c {
		case '{', '[':
			if len(stack) >= maxNestingDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = key(b, i, m, len(stack) == 1); i < 0 {
					return false
				}
			}
			continue
		default:
			if i = scalarEnd(b, i); i < 0 {
				return false
			}
		}
		// A value ended at i: close containers, or find the next value.
		for {
			if m != nil && len(stack) == 1 && stack[0] == '{' && !m.over && m.n > 0 {
				m.s[m.n-1].v1 = i
			}
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i = key(b, i, m, len(stack) == 1); i < 0 {
					return false
				}
			}
			break
		}
	}
}

// scalarEnd returns the index past the string, literal or number at i, or
// -1.
func scalarEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return validString(b, i)
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return numberEnd(b, i)
}

// maxNestingDepth is encoding/json's limit on nested containers.
const maxNestingDepth = 10000

// key crosses an object's key and its ':' at i, and the space after; it
// returns where the value starts, or -1. A key of the top level (top) is
// noted in m, if m is not nil.
func key(b []byte, i int, m *members, top bool) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	k0 := i
	if i = validString(b, i); i < 0 {
		return -1
	}
	k1 := i
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	i = skipSpace(b, i+1)
	if m != nil && top {
		m.note(k0, k1, i)
	}
	return i
}

// plain marks the bytes a string may hold as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString returns the index just past the string that starts with the
// quote at i, checking its escapes and that it holds no control
// character, or -1 if it is not a valid string. It crosses plain bytes
// eight at a time and lands on the first special one directly.
func validString(b []byte, i int) int {
	for i++; ; {
		if i+8 <= len(b) {
			m := special8(binary.LittleEndian.Uint64(b[i:]))
			if m == 0 {
				i += 8
				continue
			}
			i += bits.TrailingZeros64(m) >> 3
		} else {
			for i < len(b) && plain[b[i]] {
				i++
			}
			if i >= len(b) {
				return -1
			}
		}
		switch b[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !hex4(b[i+2:i+6]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		default: // a control character
			return -1
		}
	}
}

// special8 marks, in the high bit of each of the 8 bytes of w, whether it
// is a quote, a backslash or a control character (below 0x20): the classic
// "has a zero byte" test on w^quotes and w^backslashes, and "has a byte
// below n" on w. A mark above a marked byte may be false (a borrow), but
// the lowest mark is always true, which is all validString uses.
func special8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ (ones * '"')
	bs := w ^ (ones * '\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w) & highs
}

func hex4(h []byte) bool {
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// literal returns the index past lit at i, or -1.
func literal(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}

// numberEnd returns the index past the number at i, or -1:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}
