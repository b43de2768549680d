package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Write writes the record as NDJSON in the proxy's format (one event per
// line, the header first), which Load and Read read back and
// record.Read reads. The redaction given to Load or Read is applied
// again first, so that a frame or event changed since then is redacted
// too; chunk data is rebuilt from the frames.
func (r *Record) Write(w io.Writer) error {
	r.redactAll()
	byChunk := map[int64]*Chunk{}
	for i := range r.Chunks {
		byChunk[r.Chunks[i].Seq] = &r.Chunks[i]
	}
	bw := bufio.NewWriter(w)
	for _, e := range r.Events {
		if c := byChunk[e.Seq]; e.Ev == record.EvChunk && c != nil && e.Data == "" && e.B64 == nil {
			if c.Parts != nil {
				e.Data, e.B64 = chunkData(r, c)
			} else if b := c.data.bytes(); len(b) > 0 {
				e.Data, e.B64 = asData(b)
			}
		}
		b, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("replay: encoding event %d: %w", e.Seq, err)
		}
		bw.Write(b)
		if err := bw.WriteByte('\n'); err != nil {
			return fmt.Errorf("replay: writing the record: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("replay: writing the record: %w", err)
	}
	return nil
}

// redactAll applies the record's redaction to its frames, then brings the
// events in line with them: frame heads and hashes, chunk data, cancel
// reasons. It changes nothing the second time.
func (r *Record) redactAll() {
	if len(r.rules) == 0 {
		return
	}
	bySeq := map[int64]*Frame{}
	for _, d := range []string{record.DirIn, record.DirOut, record.DirErr} {
		fs := *r.frames(d)
		for i := range fs {
			f := &fs[i]
			bySeq[f.Seq] = f
			if !f.Whole() {
				if h, ok := wire.Rewrite(f.Head, r.rules); ok {
					f.Head = h
				}
				// The hash is of bytes the record has not, which may hold
				// what the rules redact.
				f.Hash = ""
				continue
			}
			body, ok := wire.Rewrite(f.body(), r.rules)
			if !ok {
				continue
			}
			old := f.Line()
			r.setBody(f, body)
			f.Head = headOf(body, r.Header.Head)
			f.Hash = frameHash(body)
			r.moveParts(d, i, old, f.Line())
		}
	}
	r.syncEvents(bySeq)
}

// setBody makes b frame f's body: in Body if it is short, else in the
// store.
func (r *Record) setBody(f *Frame, b []byte) {
	if r.last != nil {
		r.last.mu.Lock()
		r.last.line = nil // it may be f's
		r.last.mu.Unlock()
	}
	if len(b) <= memBody {
		f.Body, f.stored = b, ref{}
		return
	}
	f.Body, f.stored = nil, r.storeOf(f.Dir).put(b)
}

// moveParts moves the chunk parts of frame i of direction d from its old
// line to its new one.
func (r *Record) moveParts(d string, i int, old, nl []byte) {
	for ci := range r.Chunks {
		c := &r.Chunks[ci]
		if c.Dir != d {
			continue
		}
		for pi := range c.Parts {
			p := &c.Parts[pi]
			if p.Frame != i {
				continue
			}
			end := p.To == len(old)
			p.From, p.To = mapOffset(old, nl, p.From), mapOffset(old, nl, p.To)
			if end {
				p.To = len(nl)
			}
		}
	}
}

// syncEvents brings the events in line with the redacted frames: frame
// heads and hashes, chunk data, cancel reasons.
func (r *Record) syncEvents(bySeq map[int64]*Frame) {
	byChunk := map[int64]*Chunk{}
	for i := range r.Chunks {
		byChunk[r.Chunks[i].Seq] = &r.Chunks[i]
	}
	reason := wire.RuleAt(r.rules, []string{"params", "reason"})
	for i := range r.Events {
		e := &r.Events[i]
		switch e.Ev {
		case record.EvFrame:
			if f := bySeq[e.Seq]; f != nil {
				e.Head, e.Hash = string(f.Head), f.Hash
			}
		case record.EvChunk:
			c := byChunk[e.Seq]
			if c == nil || c.Parts == nil {
				break
			}
			e.Data, e.B64 = "", nil // put back from the parts by Write
			if _, ok := r.ChunkBytes(c, nil); !ok {
				// Not all of it is known: keep what is, redacted, never
				// the bytes as read.
				e.Data, e.B64 = chunkData(r, c)
			}
		case record.EvCancel:
			if reason != nil && e.Reason != "" {
				if reason.Edit == wire.Drop {
					e.Reason = ""
				} else if v, _ := json.Marshal(e.Reason); !wire.IsHashed(v) {
					var s string
					_ = json.Unmarshal(wire.Hashed(v), &s)
					e.Reason = s
				}
			}
		}
	}
}

// chunkData returns a chunk's bytes from its parts, as an event holds
// them: Data if they are UTF-8, else B64.
func chunkData(r *Record, c *Chunk) (string, []byte) {
	b, _ := r.ChunkBytes(c, nil)
	return asData(b)
}

// asData returns bytes as a chunk event holds them: Data if they are
// UTF-8, else B64.
func asData(b []byte) (string, []byte) {
	if utf8.Valid(b) {
		return string(b), nil
	}
	return "", b
}

// headOf returns the first n bytes of b, not cutting a character.
func headOf(b []byte, n int) []byte {
	if n <= 0 {
		return nil
	}
	if len(b) <= n {
		return append([]byte(nil), b...)
	}
	h := b[:n]
	for i := len(h) - 1; i >= 0 && i >= len(h)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(h[i]) {
			if !utf8.FullRune(h[i:]) {
				h = h[:i]
			}
			break
		}
	}
	return append([]byte(nil), h...)
}
