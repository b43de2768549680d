package replay

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
)

// bodies recovers the frames' bytes of direction d from the chunks' data,
// when the record kept bodies, and notes which lines each chunk held. A
// chunk's data is its bytes after the proxy's redaction, so its length may
// differ from N; but it holds the same newlines as the bytes read, so
// lines are found by counting them: every line but an empty one is a
// frame. A line that is not whole in the data (the observer lost a chunk)
// gets no body; a body whose hash is not the frame event's is dropped. A
// long body stays where the chunks' data are, in the record's store.
func (r *Record) bodies(d string) {
	if !r.Header.Bodies {
		return
	}
	ls := &lines{frames: *r.frames(d), curOK: true}
	for i := range r.Chunks {
		c := &r.Chunks[i]
		if c.Dir != d {
			continue
		}
		data := c.data.bytes()
		// A chunk with no data and no gap had every byte in a redacted
		// value (the proxy's -redact, or Redact when the record was
		// saved): its bytes are known, and are none.
		if c.N > 0 && c.gap {
			ls.unknown(c)
			continue
		}
		ls.chunk(c, data)
	}
	if len(ls.cur) > 0 && ls.fi < len(ls.frames) && ls.frames[ls.fi].Unterminated {
		ls.endLine(ls.fi)
	}
}

// lines cuts one stream's chunks into lines, in stream order, and gives
// each frame its body and each chunk its parts.
type lines struct {
	frames  []Frame
	cur     []byte // the line so far
	curOK   bool   // cur is the line from its start
	curRef  ref    // where cur is in the store, if it is in one piece there
	pending []pend // the chunks holding parts of cur
	fi      int    // the frame of the next line
}

type pend struct {
	c    *Chunk
	from int
}

// last returns the stream offset of frame i's last byte.
func (ls *lines) last(i int) int64 {
	f := ls.frames[i]
	switch {
	case f.Unterminated:
		return f.Off + f.Size - 1
	case f.CRLF:
		return f.Off + f.Size + 1
	}
	return f.Off + f.Size
}

// endLine ends the current line as frame f's (-1: a line of no frame).
func (ls *lines) endLine(f int) {
	frames := ls.frames
	if f >= 0 && ls.curOK {
		body := ls.cur
		if !frames[f].Unterminated {
			body = bytes.TrimSuffix(body, []byte("\n"))
			if frames[f].CRLF {
				body = bytes.TrimSuffix(body, []byte("\r"))
			}
		}
		if frames[f].Hash == "" || frames[f].Hash == frameHash(body) {
			if len(body) <= memBody || ls.curRef.s == nil {
				frames[f].Body = slices.Clone(body)
			} else {
				frames[f].stored = ref{ls.curRef.s, ls.curRef.at, len(body)}
			}
		}
	}
	for k, p := range ls.pending {
		to := len(ls.cur)
		if k+1 < len(ls.pending) {
			to = ls.pending[k+1].from
		}
		if f < 0 {
			p.c.Parts = append(p.c.Parts, Part{Frame: -1, Raw: slices.Clone(ls.cur[p.from:to])})
		} else {
			p.c.Parts = append(p.c.Parts, Part{Frame: f, From: p.from, To: to})
		}
	}
	ls.cur, ls.pending, ls.curOK, ls.curRef = ls.cur[:0], ls.pending[:0], true, ref{}
}

// unknown takes a chunk whose bytes the record has not: the line in
// progress and the lines ending in it have no body.
func (ls *lines) unknown(c *Chunk) {
	end := c.Off + c.N
	if len(ls.pending) > 0 && ls.fi < len(ls.frames) && ls.last(ls.fi) >= end {
		ls.curOK = false // the line goes on past this chunk
		return
	}
	if len(ls.pending) > 0 && ls.fi < len(ls.frames) {
		ls.curOK = false
		ls.endLine(ls.fi)
		ls.fi++
	}
	for ls.fi < len(ls.frames) && ls.last(ls.fi) < end {
		ls.fi++
	}
	ls.cur, ls.pending, ls.curRef = ls.cur[:0], ls.pending[:0], ref{}
	// The next line starts with the next chunk only if a frame ended
	// right at the end of this one.
	ls.curOK = ls.fi > 0 && ls.last(ls.fi-1) == end-1
}

// chunk takes a chunk's bytes.
func (ls *lines) chunk(c *Chunk, data []byte) {
	c.Parts = []Part{}
	at := c.data.at
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		seg := data
		if i >= 0 {
			seg = data[:i+1]
		}
		segRef := ref{c.data.s, at, len(seg)}
		switch {
		case len(ls.cur) == 0:
			ls.curRef = segRef
		case segRef.follows(ls.curRef):
			ls.curRef.n += len(seg)
		default:
			ls.curRef = ref{}
		}
		at += int64(len(seg))
		ls.pending = append(ls.pending, pend{c, len(ls.cur)})
		ls.cur = append(ls.cur, seg...)
		data = data[len(seg):]
		if i < 0 {
			break
		}
		if ls.curOK && len(ls.cur) == 1 || ls.fi >= len(ls.frames) {
			ls.endLine(-1) // an empty line, or more lines than frames
			continue
		}
		ls.endLine(ls.fi)
		ls.fi++
	}
}

// castagnoli is the CRC-32C table of the proxy's frame checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frameHash returns b's checksum as the proxy writes it in a frame event:
// "crc32c:<8 hex digits>".
func frameHash(b []byte) string {
	return fmt.Sprintf("crc32c:%08x", crc32.Checksum(b, castagnoli))
}

// ChunkBytes returns the bytes of chunk c as the record has them, each
// frame's line first passed through line (nil keeps them as recorded):
// line returns the bytes to use in place of the line (body and terminator)
// of f, the i-th frame of c's direction, or nil to leave the frame out. A part of a line that line
// changed is placed where it was in the recorded line, with the change in
// the part that held it. ok is false when the record has not the chunk's
// bytes, or has not the body of a frame in it: those frames are left out.
func (r *Record) ChunkBytes(c *Chunk, line func(i int, f *Frame) []byte) (b []byte, ok bool) {
	if c.Parts == nil {
		return nil, c.N == 0
	}
	frames := *r.frames(c.Dir)
	ok = true
	for _, p := range c.Parts {
		if p.Frame < 0 {
			b = append(b, p.Raw...)
			continue
		}
		f := &frames[p.Frame]
		if !f.Whole() {
			ok = false
			continue
		}
		if line == nil {
			b = append(b, f.linePart(p.From, p.To)...)
			continue
		}
		l := line(p.Frame, f)
		if l == nil {
			continue
		}
		old := r.lineOf(c.Dir, p.Frame, f)
		from, to := p.From, p.To
		if !bytes.Equal(l, old) {
			from, to = mapOffset(old, l, from), mapOffset(old, l, to)
			if p.To == len(old) {
				to = len(l)
			}
		}
		b = append(b, l[min(from, len(l)):min(to, len(l))]...)
	}
	return b, ok
}

// linePart returns bytes [from, to) of f's line, reading no more of a
// long body than that.
func (f *Frame) linePart(from, to int) []byte {
	if f.Body != nil || f.stored.s == nil {
		l := f.Line()
		return l[min(from, len(l)):min(to, len(l))]
	}
	n := f.stored.n
	b := f.stored.read(from, to)
	term := "\n"
	switch {
	case f.Unterminated:
		term = ""
	case f.CRLF:
		term = "\r\n"
	}
	if to > n {
		b = append(b, term[min(max(from-n, 0), len(term)):min(to-n, len(term))]...)
	}
	return b
}

// lastLine is the long line ChunkBytes read last, which the next chunks
// of its stream hold the rest of.
type lastLine struct {
	mu    sync.Mutex
	dir   string
	frame int
	line  []byte
}

// lineOf returns frame i's line (of direction d), reading a long one
// from the store once for all the chunks that hold parts of it.
func (r *Record) lineOf(d string, i int, f *Frame) []byte {
	if f.Body != nil || r.last == nil {
		return f.Line()
	}
	r.last.mu.Lock()
	defer r.last.mu.Unlock()
	if r.last.line == nil || r.last.dir != d || r.last.frame != i {
		r.last.dir, r.last.frame, r.last.line = d, i, f.Line()
	}
	return r.last.line
}
