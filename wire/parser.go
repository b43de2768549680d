package wire

// Parser parses a stream of frames as ParseMessageInto does, with the same
// results, faster when a frame begins as the frame before it did. It
// remembers the first bytes of the last frame and where its values
// began: a frame of a flood (progress notifications that differ in a few
// digits) is checked again only from the last value that began inside the
// bytes the two frames share. The zero Parser is ready; it is not safe for
// concurrent use.
type Parser struct {
	prev   []byte  // the last frame's first bytes, at most memoBytes
	rec    memo    // where its values began
	mem    members // its top-level members, the first rec.marks[k].n valid from mark k on
	hint   int     // the mark the last frame was checked again from
	env    envCache
	parsed bool // the last frame was a message: env holds all it found
}

// memoBytes is how much of the last frame a Parser remembers, and maxMarks
// how many of its value starts: a flood's messages are short, and a long
// frame costs its own bytes to check whatever a Parser remembers.
const (
	memoBytes = 1024
	maxMarks  = 128
)

// A mark is the validator's state where a value begins: all it needs to go
// on from there.
type mark struct {
	pos   int32  // the value's first byte
	depth uint8  // containers open
	n     uint8  // top-level members noted
	open  uint64 // the containers, innermost in bit 0: 1 for an object
}

// memo collects the marks of one frame.
type memo struct {
	marks []mark
	off   bool // no more marks for this frame
}

// note records the mark of a value starting at i.
func (r *memo) note(i, depth int, open uint64, m *members) {
	if r.off || depth > 64 || i >= memoBytes || len(r.marks) == maxMarks || m.over {
		r.off = true // once deeper than open holds, open is wrong for the rest of the frame
		return
	}
	r.marks = append(r.marks, mark{pos: int32(i), depth: uint8(depth), n: uint8(m.n), open: open})
}

// Parse is ParseMessageInto(m, frame): m's raw fields alias frame.
func (p *Parser) Parse(m *Message, frame []byte) error {
	*m = Message{}
	at, k := p.resume(frame)
	p.rec.marks, p.rec.off = p.rec.marks[:k], false
	p.mem.n, p.mem.over = int(at.n), false
	if at.n > 0 {
		p.mem.s[at.n-1].v1 = -1 // its value is still open at the mark
	}
	if !validFrom(frame, &p.mem, &p.rec, at) {
		p.prev, p.rec.marks = p.prev[:0], p.rec.marks[:0]
		return invalid(frame)
	}
	p.prev = append(p.prev[:at.pos], frame[at.pos:min(len(frame), memoBytes)]...)
	p.env.same = 0
	if p.parsed && at.n > 0 {
		p.env.same = int(at.n) - 1 // the members before the one open at the mark
	}
	p.parsed = false
	if err := parseValid(frame, &p.mem, m, &p.env); err != nil {
		*m = Message{}
		return err
	}
	p.parsed = true
	return nil
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
