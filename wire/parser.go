package wire

import (
	"encoding/binary"
	"math/bits"
)

// Parser parses a stream of frames as ParseMessageInto does, with the same
// results, faster when a frame begins as the frame before it did. It
// remembers the first bytes of the last frame and where its values began
// and ended: a frame of a flood (progress notifications that differ in a
// few digits) is checked again only from the last value that began inside
// the bytes the two frames share, or, when it is as long as the frame
// before and differs only inside some of its numbers and strings, only in
// those, and its envelope is then sliced out where the last one's was
// unless those values are its "jsonrpc", its "method" or inside its
// "error". The zero Parser is ready; it is not safe for concurrent use.
type Parser struct {
	prev     []byte  // the last frame's first bytes, at most memoBytes
	prevLen  int     // the last frame's length
	rec      memo    // where its values began
	mem      members // its top-level members, the first rec.marks[k].n valid from mark k on
	hint     int     // the mark the last frame was checked again from
	env      envCache
	parsed   bool     // the last frame was a message: env holds all it found
	complete bool     // the last frame was valid, remembered whole, every value marked
	changed  []int    // the marks of the values sameShape found changed last
	spans    []extent // where they lie, for sameAsLast, which reads no mark
	last     slices
	fast     bool // p.same() as of the last change of changed, last or parsed

	// held is the last frame, given to ParseHeld, when prev still lacks
	// its bytes from the first of the values in changed to the end of the
	// last (which all that prev lacks): the caller keeps them until the
	// next call, and a frame as like it as the one before is compared with
	// prev outside those values only (sameAsLast), so none is copied until
	// something else reads prev (sync).
	held []byte
}

// slices is where the envelope of the last frame that was a message lay,
// for a frame of the same shape whose changes leave its envelope as it was
// (see Parser.same): its message is the last one, sliced out of it.
type slices struct {
	ok                 bool   // the last frame was a message without "error", and the fields below are its
	fixed              uint8  // the members whose values the message holds decoded: "jsonrpc", "method"
	id, params, result [2]int // spans of the values, {-1, -1} if absent
	method             string
}

// memoBytes is how much of the last frame a Parser remembers, and maxMarks
// how many of its value starts: a flood's messages are short, and a long
// frame costs its own bytes to check whatever a Parser remembers.
const (
	memoBytes = 1024
	maxMarks  = 128
)

// An extent is where a value lies in a frame: from its first byte to the one
// past it.
type extent struct{ pos, end int32 }

// A mark is the validator's state where a value begins: all it needs to go
// on from there.
type mark struct {
	pos   int32  // the value's first byte
	end   int32  // the byte past it, for a string, literal or number; else 0
	depth uint8  // containers open
	n     uint8  // top-level members noted
	open  uint64 // the containers, innermost in bit 0: 1 for an object
}

// stack appends to b the containers open at the mark, outermost first.
func (at mark) stack(b []byte) []byte {
	for d := int(at.depth) - 1; d >= 0; d-- {
		c := byte('[')
		if at.open>>d&1 == 1 {
			c = '{'
		}
		b = append(b, c)
	}
	return b
}

// memo collects the marks of one frame.
type memo struct {
	marks []mark
	off   bool // no more marks for this frame
	last  int  // the mark of the value being crossed, or -1
}

// note records the mark of a value starting at i.
func (r *memo) note(i, depth int, open uint64, m *members) {
	r.last = -1
	if r.off || depth > 64 || i >= memoBytes || len(r.marks) == maxMarks || m.over {
		r.off = true // once deeper than open holds, open is wrong for the rest of the frame
		return
	}
	r.last = len(r.marks)
	r.marks = append(r.marks, mark{pos: int32(i), depth: uint8(depth), n: uint8(m.n), open: open})
}

// ended records that the string, literal or number of the last mark ends
// before i.
func (r *memo) ended(i int) {
	if r.last >= 0 {
		r.marks[r.last].end = int32(i)
	}
}

// Parse is ParseMessageInto(m, frame): m's raw fields alias frame.
func (p *Parser) Parse(m *Message, frame []byte) error { return p.parse(m, frame, false) }

// ParseHeld is Parse, for a caller that keeps frame's bytes unchanged until
// its next call of Parse, ParseHeld or Release: a frame of a flood then
// costs no copy of the values that changed since the frame before (the
// frames of one read, parsed where they lie in the read buffer).
func (p *Parser) ParseHeld(m *Message, frame []byte) error { return p.parse(m, frame, true) }

// Release copies what p remembers of the last frame given to ParseHeld
// and still reads from it: after it, the caller may change that frame's
// bytes.
func (p *Parser) Release() { p.sync() }

// sync copies into prev the bytes of the held frame it lacks.
func (p *Parser) sync() {
	if p.held == nil {
		return
	}
	from, to := p.spans[0].pos, p.spans[len(p.spans)-1].end
	copy(p.prev[from:to], p.held[from:to])
	p.held = nil
}

func (p *Parser) parse(m *Message, frame []byte, held bool) error {
	ok, tried := p.like(m, frame, held)
	if ok {
		return nil
	}
	return p.parseOther(m, frame, held, tried)
}

// ParseLike is ParseHeld for a frame as like the last one as that one was
// like the frame before (a flood's next frame), and reports true; for any
// other frame it reports false and changes nothing, m included, and the
// frame is to be given to ParseHeld. A frame it takes differs from the
// last one only inside strings, numbers and literals, none of which holds
// a control character: it holds a newline or a carriage return only where
// the last frame did. A caller that framed the last frame itself can take
// the next one from the bytes that follow it, as long, without looking
// for its newline.
func (p *Parser) ParseLike(m *Message, frame []byte) bool {
	ok, _ := p.like(m, frame, true)
	return ok
}

// like is parse for a flood's frame: as like the last one as that one was
// like the one before, with the last one's envelope (see same). For any
// other frame it changes nothing and reports false, and tried whether
// sameAsLast failed for it; parseOther parses it.
func (p *Parser) like(m *Message, frame []byte, held bool) (ok, tried bool) {
	l := &p.last
	if !p.fast || !p.complete || len(frame) != p.prevLen || p.prevLen > memoBytes {
		return false, false
	}
	// A response is one only while its id is not null (it has no "error":
	// see same).
	if _, ok := p.sameAsLast(frame); !ok || (l.method == "" && !hasID(span2(frame, &l.id))) {
		return false, !ok
	}
	p.held = frame // the values in changed, which sameAsLast needs, are not empty
	if !held {
		p.sync()
	}
	// The same two lines as parse's shortcut below: a call for them, not
	// inlined, cost about 8% of BenchmarkParseMessageInto/progress-held
	// (-test.cpu 1, three interleaved pairs).
	m.JSONRPC, m.Method, m.Error = "2.0", l.method, nil // every field: m is not cleared first
	m.ID, m.Params, m.Result = span2(frame, &l.id), span2(frame, &l.params), span2(frame, &l.result)
	return true, false
}

// parseOther is parse for any frame; tried reports that sameAsLast failed
// for it.
func (p *Parser) parseOther(m *Message, frame []byte, held, tried bool) error {
	if p.complete && len(frame) == p.prevLen && p.prevLen <= memoBytes {
		// sameAsLast compares frame with prev outside the values in
		// changed only, where prev has the held frame's bytes; anything
		// else reads prev whole.
		first, ok := -1, false
		if !tried {
			first, ok = p.sameAsLast(frame)
		}
		if !ok {
			p.sync()
			first, ok = p.sameShape(frame)
		}
		if ok {
			if n := len(p.changed); n > 0 { // the only bytes that differ, and those between, which do not
				p.held = frame
				if !held {
					p.sync()
				}
			}
			// A response is one only while its id is not null (it has no
			// "error": see same).
			if l := &p.last; p.fast && (l.method != "" || hasID(span2(frame, &l.id))) {
				m.JSONRPC, m.Method, m.Error = "2.0", l.method, nil // every field: m is not cleared first
				m.ID, m.Params, m.Result = span2(frame, &l.id), span2(frame, &l.params), span2(frame, &l.result)
				return nil
			}
			*m = Message{}
			same := p.mem.n // the members before the first that changed
			if first >= 0 {
				same = 0
				for same < p.mem.n && p.mem.s[same].v1 <= first {
					same++
				}
			}
			return p.envelope(m, frame, same)
		}
	}
	p.sync()
	*m = Message{}
	p.complete, p.changed, p.spans, p.fast = false, p.changed[:0], p.spans[:0], false
	at, k := p.resume(frame)
	p.rec.marks, p.rec.off = p.rec.marks[:k], false
	p.mem.n, p.mem.over = int(at.n), false
	if at.n > 0 {
		p.mem.s[at.n-1].v1 = -1 // its value is still open at the mark
	}
	if !validFrom(frame, &p.mem, &p.rec, at) {
		p.prev, p.rec.marks, p.parsed, p.last.ok = p.prev[:0], p.rec.marks[:0], false, false
		return invalid(frame)
	}
	p.prev = append(p.prev[:at.pos], frame[at.pos:min(len(frame), memoBytes)]...)
	p.prevLen, p.complete = len(frame), !p.rec.off
	return p.envelope(m, frame, max(0, int(at.n)-1)) // the members before the one open at the mark
}

// envelope slices the envelope of the valid frame out into m, taking what
// it can of the first same members from the frame before.
func (p *Parser) envelope(m *Message, frame []byte, same int) error {
	p.env.same = 0
	if p.parsed {
		p.env.same = same
	}
	p.parsed, p.last.ok, p.fast = false, false, false
	if err := parseValid(frame, &p.mem, m, &p.env); err != nil {
		*m = Message{}
		return err
	}
	p.parsed = true
	p.remember(m)
	p.fast = p.same()
	return nil
}

// ParamsAt returns where the Params of the message the last Parse (or
// ParseHeld) returned begin in the frame it was given: m.Params is frame[i:i+len(m.Params)]. It
// returns -1 when that Parse failed, when the message has no params, or
// when the Parser did not note where they lie (a message with an "error",
// or with more top-level members than it notes). A caller that copies the
// frame can then slice the params out of its copy rather than copy them too.
func (p *Parser) ParamsAt() int {
	if !p.last.ok { // false after a failed Parse: not p.parsed, which a flood's frames do not read
		return -1
	}
	return p.last.params[0]
}

// remember notes where the envelope of m, just parsed from a frame whose
// members are p.mem, lies, for Parser.same.
func (p *Parser) remember(m *Message) {
	l := &p.last
	if m.Error != nil || p.mem.over {
		return
	}
	l.id, l.params, l.result = [2]int{-1, -1}, [2]int{-1, -1}, [2]int{-1, -1}
	l.fixed, l.method = 0, m.Method
	for j, sp := range p.mem.s[:p.mem.n] {
		v := [2]int{sp.v0, sp.v1}
		switch p.env.kinds[j] {
		case 0, 2: // "jsonrpc", "method": checked or decoded
			l.fixed |= 1 << j
		case 1:
			l.id = v
		case 3:
			l.params = v
		case 4:
			l.result = v
		case 5:
			return // an "error" is decoded
		}
	}
	l.ok = true
}

// same reports whether the frame sameShape has just matched to the last
// one has the last one's envelope at the same places: the last frame was a
// message without "error", and the values that may have changed (p.changed)
// are not those of "jsonrpc" or "method" (Parse checks that a response's
// id is still not null). A value's mark records the
// top-level members noted before it, so the member whose value holds it is
// the last of those. Its keys and structure are the last frame's
// (sameShape), so its members and their kinds are too.
func (p *Parser) same() bool {
	if !p.last.ok || !p.parsed {
		return false
	}
	for _, k := range p.changed {
		mk := p.rec.marks[k]
		if mk.n == 0 || p.last.fixed>>(mk.n-1)&1 != 0 {
			return false
		}
	}
	return true
}

// span2 returns the value of b at sp as parseValid slices it, nil if absent.
// sp is read where it lies: an array copied whole is written to the stack
// as one 16-byte store and read back as two 8-byte loads, which the
// processor cannot forward.
func span2(b []byte, sp *[2]int) []byte {
	lo, hi := sp[0], sp[1]
	if lo < 0 {
		return nil
	}
	return b[lo:hi:hi]
}

// sameShape reports whether frame, as long as the last frame and remembered
// whole, differs from it only inside strings, literals and numbers that,
// checked again, end where they did: then it is valid, with the same
// marks and members. first is where it first differs, -1 if nowhere. Parse
// tries sameAsLast first.
func (p *Parser) sameShape(frame []byte) (first int, ok bool) {
	first = -1
	marks, k := p.rec.marks, 0
	p.changed, p.spans = p.changed[:0], p.spans[:0]
	for i := 0; i < len(frame); {
		d := i + commonPrefix(frame[i:], p.prev[i:])
		if d == len(frame) {
			break
		}
		if first < 0 {
			first = d
		}
		for k+1 < len(marks) && int(marks[k+1].pos) <= d {
			k++
		}
		if len(marks) == 0 {
			return -1, false
		}
		mk := marks[k]
		if int(mk.pos) > d || d >= int(mk.end) || scalarEnd(frame, int(mk.pos)) != int(mk.end) {
			p.changed, p.spans = p.changed[:0], p.spans[:0]
			return -1, false
		}
		p.changed, p.spans = append(p.changed, k), append(p.spans, extent{mk.pos, mk.end})
		i = int(mk.end)
	}
	p.fast = p.same()
	return first, true
}

// sameAsLast is sameShape when frame differs from the last frame, if at
// all, only in the values that the last frame changed (a flood's counters
// and messages): the bytes between them are compared whole, which is
// cheaper than finding where they differ. first is then the start of the
// first of those values.
func (p *Parser) sameAsLast(frame []byte) (first int, ok bool) {
	spans := p.spans
	if len(spans) == 0 {
		return -1, false
	}
	prev, i := p.prev, 0
	if len(prev) != len(frame) {
		return -1, false
	}
	for _, sp := range spans {
		pos, end := int(sp.pos), int(sp.end)
		if !sameBytes(frame, prev, i, pos) {
			return -1, false
		}
		// The value: a string, or a positive integer checked here (no
		// call: the flood's counters), or any other by scalarEnd.
		switch c := frame[pos]; {
		case c == '"':
			if !(end-pos >= 2 && frame[end-1] == '"' && plainInside(frame, pos+1, end-1)) && validString(frame, pos) != end {
				return -1, false
			}
		case c-'1' < 9 && allDigits(frame[pos+1:end]) && (end == len(frame) || !inNumber(frame[end])):
		default:
			if scalarEnd(frame, pos) != end {
				return -1, false
			}
		}
		i = end
	}
	if !sameBytes(frame, prev, i, len(frame)) {
		return -1, false
	}
	return int(spans[0].pos), true
}

// sameBytes reports whether a[i:j] and b[i:j] are equal; a and b are at
// least j bytes long. Up to 8 bytes are compared as one word.
func sameBytes(a, b []byte, i, j int) bool {
	if n := j - i; n <= 8 && j >= 8 {
		x := binary.LittleEndian.Uint64(a[j-8:j]) ^ binary.LittleEndian.Uint64(b[j-8:j])
		return x>>(8*(8-n)) == 0 // the bytes before i shifted out
	}
	return string(a[i:j]) == string(b[i:j])
}

// plainInside reports whether b[i:e], at most 24 bytes, holds no quote,
// backslash or control character, looking at up to three words at once
// (validString crosses them one after the other): the inside of a short
// string. It may report false for some that hold none, which costs only
// validString; so may a longer one.
func plainInside(b []byte, i, e int) bool {
	var m uint64
	switch n := e - i; {
	case n >= 8 && n <= 16:
		m = special8(binary.LittleEndian.Uint64(b[i:])) | special8(binary.LittleEndian.Uint64(b[e-8:]))
	case n > 16 && n <= 24:
		m = special8(binary.LittleEndian.Uint64(b[i:])) | special8(binary.LittleEndian.Uint64(b[i+8:])) | special8(binary.LittleEndian.Uint64(b[e-8:]))
	case n < 8 && e >= 8: // the word ending at e, the marks of the bytes before i shifted out
		m = special8(binary.LittleEndian.Uint64(b[e-8:])) >> (8 * (8 - n))
	default:
		return false
	}
	return m == 0
}

// inNumber reports whether c may go on a number: a digit, '.', 'e' or 'E'.
func inNumber(c byte) bool { return c-'0' <= 9 || c == '.' || c|0x20 == 'e' }

// allDigits reports whether b holds only the digits 0-9.
func allDigits(b []byte) bool {
	for _, c := range b {
		if c-'0' > 9 {
			return false
		}
	}
	return true
}

// commonPrefix returns how many bytes a and b share at their start.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for ; i+8 <= n; i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)>>3
		}
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// resume returns the last mark of the frame before whose bytes up to and
// including the mark's own (the validator looked at it to know a value
// begins there) frame shares, and the number of marks before it; or the
// zero mark and 0. The marks are in order, and a frame that shares the
// bytes up to one shares those up to every earlier one: a binary search,
// each step one comparison of bytes.
func (p *Parser) resume(frame []byte) (mark, int) {
	marks := p.rec.marks
	shared := func(k int) bool {
		n := int(marks[k].pos) + 1
		return n <= len(frame) && string(frame[:n]) == string(p.prev[:n])
	}
	lo, hi := 0, len(marks)               // marks[:lo] shared, marks[hi:] not
	if h := p.hint; h < hi && shared(h) { // a flood's frames differ where the last one did
		lo = h + 1
		if lo < hi && !shared(lo) {
			hi = lo
		}
	}
	for lo < hi {
		k := int(uint(lo+hi) >> 1)
		if shared(k) {
			lo = k + 1
		} else {
			hi = k
		}
	}
	if lo == 0 {
		return mark{}, 0
	}
	p.hint = lo - 1
	return marks[lo-1], lo - 1
}
