package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
)

// Write writes the record as NDJSON in the proxy's format (one event per
// line, the header first), which Load and Read read back and
// record.Read reads. The redaction given to Load or Read is applied
// again first, so that a frame or event changed since then is redacted
// too; chunk data is rebuilt from the frames.
func (r *Record) Write(w io.Writer) error {
	r.redactAll()
	bw := bufio.NewWriter(w)
	for _, e := range r.Events {
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
	type old struct {
		dir  string
		i    int
		line []byte
	}
	var changed []old
	bySeq := map[int64]*Frame{}
	for _, d := range []string{record.DirIn, record.DirOut, record.DirErr} {
		fs := *r.frames(d)
		for i := range fs {
			f := &fs[i]
			bySeq[f.Seq] = f
			if f.Body == nil {
				if h, ok := rewrite(f.Head, r.rules); ok {
					f.Head = h
				}
				// The hash is of bytes the record has not, which may hold
				// what the rules redact.
				f.Hash = ""
				continue
			}
			body, ok := rewrite(f.Body, r.rules)
			if !ok {
				continue
			}
			changed = append(changed, old{d, i, f.Line()})
			f.Body = body
			f.Head = headOf(body, r.Header.Head)
			f.Hash = frameHash(body)
		}
	}
	for _, o := range changed {
		f := &(*r.frames(o.dir))[o.i]
		nl := f.Line()
		for ci := range r.Chunks {
			c := &r.Chunks[ci]
			if c.Dir != o.dir {
				continue
			}
			for pi := range c.Parts {
				p := &c.Parts[pi]
				if p.Frame != o.i {
					continue
				}
				end := p.To == len(o.line)
				p.From, p.To = mapOffset(o.line, nl, p.From), mapOffset(o.line, nl, p.To)
				if end {
					p.To = len(nl)
				}
			}
		}
	}
	byChunk := map[int64]*Chunk{}
	for i := range r.Chunks {
		byChunk[r.Chunks[i].Seq] = &r.Chunks[i]
	}
	reason := r.ruleAt("params", "reason")
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
			b, _ := r.ChunkBytes(c, nil)
			e.Data, e.B64 = "", nil
			if utf8.Valid(b) {
				e.Data = string(b)
			} else {
				e.B64 = b
			}
		case record.EvCancel:
			if reason != nil && e.Reason != "" {
				if reason.drop {
					e.Reason = ""
				} else if v, _ := json.Marshal(e.Reason); !isHashed(v) {
					var s string
					_ = json.Unmarshal(hashed(v), &s)
					e.Reason = s
				}
			}
		}
	}
}

// ruleAt returns the redaction rule for the path p, if one names it.
func (r *Record) ruleAt(p ...string) *rule {
	w := &rewriter{rules: r.rules, stack: p}
	return w.match()
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
