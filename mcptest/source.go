package mcptest

import (
	"bytes"
	"io"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// stdoutSource is what the framer reads: the stall valve, with the time the
// reader spends between reads measured, and every long line passed through
// an envelope scanner: a frame over the transport limit, which is never
// parsed, still names its request, and a long response still arriving
// shows whose it is (Pending.Received). Lines up to scanFrom bytes, which
// the framer hands over whole, are not scanned: a flood of small messages
// costs the scanner nothing. It is owned by the reader goroutine; busy is
// read by Stats.
type stdoutSource struct {
	r        io.Reader
	scanner  *wire.Scanner
	limit    int64
	scanFrom int // a line is scanned once it is longer than this

	offset    int64  // stdout bytes read so far
	lineStart int64  // stdout offset of the current line
	head      []byte // the current line's first bytes, until it is scanned
	scanning  bool   // the current line is being scanned

	msg       wire.Message    // the message being dispatched (aliases the framer's buffer)
	oversized []wire.Envelope // envelopes of oversized lines not yet claimed, in order
	lastRead  time.Time       // when the last read returned
	busy      atomic.Int64    // nanoseconds spent between reads
}

func newStdoutSource(r io.Reader, limit int, onID func(start int64, e wire.Envelope)) *stdoutSource {
	src := &stdoutSource{r: r, limit: int64(limit), scanFrom: min(4096, limit)}
	src.head = make([]byte, 0, src.scanFrom)
	src.scanner = wire.NewScanner(func(e wire.Envelope) {
		if e.Size > src.limit {
			e.ID, e.Method = bytes.Clone(e.ID), nil
			src.oversized = append(src.oversized, e)
		}
	})
	src.scanner.OnID(func(e wire.Envelope) { onID(src.lineStart, e) })
	return src
}

// look follows the lines in b, which starts at stdout offset src.offset.
func (src *stdoutSource) look(b []byte) {
	for len(b) > 0 {
		if len(src.head) == 0 && !src.scanning && len(b) > src.scanFrom {
			// Every line before a newline at or below b[scanFrom] is short
			// (the first ends there at the latest, the others are shorter
			// than the span between): the flood's case, crossed a window
			// at a time, not a line at a time.
			w := b[:src.scanFrom+1]
			tail := max(0, len(w)-512)
			if j := bytes.IndexByte(w[tail:], '\n'); j >= 0 {
				src.offset += int64(tail + j + 1)
				src.lineStart = src.offset
				b = b[tail+j+1:]
				continue
			}
		}
		seg, rest := b, []byte(nil)
		i := bytes.IndexByte(b, '\n')
		if i >= 0 {
			seg, rest = b[:i+1], b[i+1:]
		}
		if i >= 0 && i <= src.scanFrom && len(src.head) == 0 && !src.scanning {
			// A short line whole in this read, the flood's case: nothing
			// to keep or scan (what the general case below does with it,
			// without copying it into head first).
			src.offset += int64(i + 1)
			src.lineStart = src.offset
			b = rest
			continue
		}
		switch {
		case src.scanning:
			src.scanner.Write(seg)
		case len(src.head)+len(seg) <= src.scanFrom || seg[len(seg)-1] == '\n' && len(src.head)+len(seg)-1 <= src.scanFrom:
			src.head = append(src.head, seg...) // a short line, or not long yet
		default:
			src.scanning = true
			src.scanner.Write(src.head)
			src.scanner.Write(seg)
		}
		src.offset += int64(len(seg))
		if seg[len(seg)-1] == '\n' {
			src.lineStart, src.head, src.scanning = src.offset, src.head[:0], false
		}
		b = rest
	}
}

// responseBegins notes where the response to a pending request begins on
// stdout, as soon as its id has passed (Pending.Received).
func (s *Session) responseBegins(start int64, e wire.Envelope) {
	n, ok := (&wire.Message{ID: e.ID}).IntID()
	if !ok || len(e.Method) > 0 { // a request of the server's own
		return
	}
	s.mu.Lock()
	p := s.pending[n]
	s.mu.Unlock()
	if p != nil {
		p.respStart.CompareAndSwap(-1, start)
	}
}

func (src *stdoutSource) Read(p []byte) (int, error) {
	if !src.lastRead.IsZero() {
		src.busy.Add(int64(time.Since(src.lastRead)))
	}
	n, err := src.r.Read(p)
	src.lastRead = time.Now()
	src.look(p[:n])
	return n, err
}

// current returns the envelope of the unfinished line.
func (src *stdoutSource) current() wire.Envelope {
	if !src.scanning {
		sc := wire.NewScanner(nil)
		sc.Write(src.head)
		return sc.Current()
	}
	return src.scanner.Current()
}

// pop returns the envelope of the oldest oversized line not yet claimed.
func (src *stdoutSource) pop() wire.Envelope {
	if len(src.oversized) == 0 {
		return wire.Envelope{}
	}
	e := src.oversized[0]
	src.oversized = src.oversized[1:]
	return e
}
