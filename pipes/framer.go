package pipes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
)

// HeadSize is the most bytes of a lost or oversized frame that errors keep,
// enough for a caller to tell which message it was.
const HeadSize = 256

// readSize is the Framer's read buffer: the size of a default Linux pipe, so
// one read(2) can empty a full pipe.
const readSize = 64 << 10

// FrameTooLargeError reports a frame longer than the Framer's limit. The
// frame was discarded without being buffered whole; the next call to Next
// returns the frame after it.
type FrameTooLargeError struct {
	Size  int64  // length of the whole frame in bytes, without its line terminator
	Limit int    // the Framer's limit
	Head  []byte // the frame's first bytes, at most HeadSize
}

// Error says how large the frame was, the limit, and how it starts.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("pipes: frame of %d bytes exceeds the %d-byte limit and was discarded (starts %q)", e.Size, e.Limit, e.Head)
}

// TruncatedFrameError reports input that ended inside a frame: the bytes read
// since the last newline are lost. It wraps io.ErrUnexpectedEOF.
type TruncatedFrameError struct {
	Lost      int64  // bytes of the unfinished frame that were lost
	Oversized bool   // the unfinished frame was already over the limit
	Head      []byte // the unfinished frame's first bytes, at most HeadSize
}

// Error says how many bytes were lost and how they start.
func (e *TruncatedFrameError) Error() string {
	return fmt.Sprintf("pipes: input ended inside a frame: %d bytes without a final newline were lost (starts %q): %v", e.Lost, e.Head, io.ErrUnexpectedEOF)
}

// Unwrap returns io.ErrUnexpectedEOF.
func (e *TruncatedFrameError) Unwrap() error { return io.ErrUnexpectedEOF }

// FramerStats counts what a Framer has consumed. Every byte read is in
// exactly one of FrameBytes, Terminators, Discarded and Pending:
//
//	Bytes == FrameBytes + Terminators + Discarded + Pending
type FramerStats struct {
	Bytes       int64 // bytes read from the underlying reader
	Frames      int64 // frames returned by Next
	FrameBytes  int64 // bytes of the frames returned, without terminators
	Largest     int64 // longest frame returned, in bytes
	Terminators int64 // bytes of line terminators: "\n", or "\r\n" ("\r" of a returned frame counts here)
	EmptyLines  int64 // lines with no bytes besides their terminator, skipped
	Oversized   int64 // frames over the limit, discarded
	Discarded   int64 // bytes of oversized frames and of a frame cut off by EOF
	Truncated   int64 // frames cut off by EOF (0 or 1)
	Pending     int64 // bytes read and not yet accounted elsewhere: the unfinished frame, bytes buffered after it, and in Stats frames returned and not yet counted
}

// Framer splits a byte stream into newline-terminated frames, as MCP's stdio
// transport frames JSON-RPC messages. It does not parse or validate what the
// frames contain.
//
// Memory stays below limit + 128 KiB whatever arrives (a 64 KiB read buffer,
// and a frame buffer of at most limit + 64 KiB + 1 bytes): a frame longer
// than the limit is skipped up to its newline without being stored.
//
// A Framer is not safe for concurrent calls to Next; Stats may be called
// from any goroutine.
type Framer struct {
	r     io.Reader
	limit int

	rbuf       []byte // read buffer
	rpos, rend int    // unconsumed bytes are rbuf[rpos:rend]
	frame      []byte // the frame being assembled, at most limit+1 bytes
	head       []byte // head of the frame being discarded
	over       bool   // discarding an oversized frame
	overSize   int64  // its bytes so far
	overCR     bool   // its last byte so far is a '\r', not yet counted: it may be a terminator's
	largest    int64  // the reading goroutine's copy of count.largest
	crEnd      int64  // stream offset after the last frame ended by "\r\n" (FrameStart)
	err        error  // sticky read error

	// count is written only by the goroutine calling Next and read by
	// Stats, without a lock. Terminators and Pending are derived (see
	// Stats).
	count struct {
		frames                                                      frameCount
		bytes, largest, emptyLines, oversized, discarded, truncated atomic.Int64
	}
}

// NewFramer returns a Framer reading from r that accepts frames of at most
// limit bytes, not counting the line terminator. A limit below 1 is taken as 1.
func NewFramer(r io.Reader, limit int) *Framer {
	return newFramer(r, limit, readSize)
}

// newFramer is NewFramer with a read buffer of size bytes (tests use tiny
// ones to reach every path with small inputs).
func newFramer(r io.Reader, limit, size int) *Framer {
	if limit < 1 {
		limit = 1
	}
	return &Framer{r: r, limit: limit, rbuf: make([]byte, size)}
}

// Limit returns the Framer's frame limit in bytes.
func (f *Framer) Limit() int { return f.limit }

// Stats returns a snapshot of the Framer's counters. It may be called from
// any goroutine at any time, and never waits for Next.
//
// No counter is negative or ever goes down, and the accounting invariant of
// FramerStats holds in every snapshot. A frame is counted in Frames,
// FrameBytes and Terminators as Next returns it; the other counters change
// as what they count happens: Bytes as each read returns, Largest as each
// frame is returned, Discarded as the bytes of an oversized frame stream
// past, before its newline counts it in Oversized.
func (f *Framer) Stats() FramerStats {
	frames, frameBytes, crs := f.count.frames.load()
	c := &f.count
	s := FramerStats{
		Frames:     frames,
		FrameBytes: frameBytes,
		Largest:    c.largest.Load(),
		EmptyLines: c.emptyLines.Load(),
		Oversized:  c.oversized.Load(),
		Discarded:  c.discarded.Load(),
		Truncated:  c.truncated.Load(),
	}
	// One '\n' per line, and a '\r' before some.
	s.Terminators = s.Frames + s.EmptyLines + s.Oversized + crs
	// Loaded last: bytes are added to c.bytes before any of them is
	// accounted, and every counter only grows, so Pending stays >= 0.
	s.Bytes = c.bytes.Load()
	s.Pending = s.Bytes - s.FrameBytes - s.Terminators - s.Discarded
	return s
}

// Next returns the next frame without its "\n" and without a "\r" before it.
// Empty lines are skipped. The returned slice is valid only until the next
// call to Next.
//
// Errors: a frame over the limit gives a *FrameTooLargeError once its newline
// arrives, and the following call returns the next frame; input that ends
// inside a frame gives a *TruncatedFrameError (wrapping io.ErrUnexpectedEOF);
// input that ends between frames gives io.EOF; any other read error is
// returned as is. After an error other than *FrameTooLargeError, Next keeps
// returning it.
func (f *Framer) Next() ([]byte, error) {
	if len(f.frame) != 0 {
		f.frame = f.frame[:0]
	}
	for {
		if f.rpos == f.rend {
			if f.err != nil {
				return nil, f.finish()
			}
			if f.direct() {
				if frame, err, ok := f.fillFrame(); ok {
					return frame, err
				}
			} else {
				n, err := f.fill(f.rbuf)
				f.rpos, f.rend = 0, n
				if err != nil {
					f.err = err
				}
			}
			continue
		}
		chunk := f.rbuf[f.rpos:f.rend]
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			f.rpos = f.rend
			f.absorb(chunk)
			continue
		}
		f.rpos += i + 1
		if frame, err, ok := f.endLine(chunk[:i]); ok {
			return frame, err
		}
	}
}

// FrameStart returns the offset in the stream at which frame, the frame the
// last call to Next returned, began. It is to be called before the next
// call to Next, by the goroutine that calls it.
func (f *Framer) FrameStart(frame []byte) int64 {
	end := f.consumed() - 1 // the '\n'
	if end+1 == f.crEnd {
		end-- // the '\r' before it
	}
	return end - int64(len(frame))
}

// consumed returns the stream offset after the bytes the Framer has
// consumed: what it read less what its read buffer still holds.
func (f *Framer) consumed() int64 { return f.count.bytes.Load() - int64(f.rend-f.rpos) }

// direct reports whether the next read should go straight into the frame
// being assembled: it already fills a read buffer, so it is probably long,
// and it has room for a whole read below the limit.
func (f *Framer) direct() bool {
	n := len(f.rbuf)
	return !f.over && len(f.frame) >= n && f.limit+1-len(f.frame) >= n
}

// fillFrame reads once into the frame's spare capacity, which saves copying
// a long frame from the read buffer. Bytes after a newline go to the empty
// read buffer. ok reports whether Next should return frame, err.
func (f *Framer) fillFrame() (frame []byte, err error, ok bool) {
	start := len(f.frame)
	f.frame = f.grow(f.frame, len(f.rbuf))
	n, rerr := f.fill(f.frame[start : start+len(f.rbuf)])
	if rerr != nil {
		f.err = rerr
	}
	got := f.frame[start : start+n]
	i := bytes.IndexByte(got, '\n')
	if i < 0 {
		f.frame = f.frame[:start+n]
		return nil, nil, false
	}
	f.rpos, f.rend = 0, copy(f.rbuf, got[i+1:])
	f.frame = f.frame[:start+i]
	return f.endLine(nil)
}

// grow returns dst with room for extra more bytes, growing it at most to
// limit+1+len(rbuf) bytes of capacity, so that one long line costs O(limit)
// memory in all. The frame never holds more than limit+1 bytes before its
// last read, so that bound is never in the way.
func (f *Framer) grow(dst []byte, extra int) []byte {
	if need := len(dst) + extra; need > cap(dst) {
		c := min(max(2*cap(dst), need, 4096), f.limit+1+len(f.rbuf))
		grown := make([]byte, len(dst), c)
		copy(grown, dst)
		dst = grown
	}
	return dst
}

// appendFrame appends b to dst within the bounds of grow.
func (f *Framer) appendFrame(dst, b []byte) []byte {
	return append(f.grow(dst, len(b)), b...)
}

// fill reads once into dst and counts what it got. A reader that returns no
// bytes and no error many times in a row is reported, as bufio does.
func (f *Framer) fill(dst []byte) (int, error) {
	for range 100 {
		n, err := f.r.Read(dst)
		if n < 0 || n > len(dst) {
			return 0, fmt.Errorf("pipes: reader returned %d bytes for a %d-byte buffer", n, len(dst))
		}
		f.count.bytes.Add(int64(n))
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// absorb takes bytes of a line whose end has not arrived yet.
func (f *Framer) absorb(b []byte) {
	if len(b) == 0 {
		return
	}
	if f.over {
		f.discard(b)
		return
	}
	if len(f.frame)+len(b) <= f.limit+1 { // +1: a final '\r' may not count
		f.frame = f.appendFrame(f.frame, b)
		return
	}
	// The frame is over the limit whatever follows: stop storing it.
	f.over = true
	f.overSize = 0
	f.overCR = false
	f.head = f.head[:0]
	stored := f.frame
	f.frame = f.frame[:0]
	f.discard(stored)
	f.discard(b)
}

// discard drops bytes of an oversized frame. A final '\r' is held back from
// Discarded until the next byte shows whether it begins the terminator.
func (f *Framer) discard(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(f.head) < HeadSize {
		f.head = append(f.head, b[:min(len(b), HeadSize-len(f.head))]...)
	}
	f.overSize += int64(len(b))
	d := int64(len(b))
	if f.overCR {
		d++ // the '\r' held back was not a terminator's
	}
	if f.overCR = b[len(b)-1] == '\r'; f.overCR {
		d--
	}
	f.count.discarded.Add(d)
}

// endLine completes the current line with its final bytes b (the "\n" is
// consumed). ok reports whether Next should return frame, err.
func (f *Framer) endLine(b []byte) (frame []byte, err error, ok bool) {
	if f.over {
		f.discard(b)
		size := f.overSize
		if f.overCR {
			size-- // the '\r' of "\r\n"
			f.count.frames.add(0, 0, 1)
		}
		f.count.oversized.Add(1)
		f.over, f.overCR = false, false
		head := f.head[:min(int64(len(f.head)), size)]
		return nil, &FrameTooLargeError{Size: size, Limit: f.limit, Head: bytes.Clone(head)}, true
	}
	if len(f.frame) == 0 {
		frame = b // the whole line is in the read buffer: no copy
	} else {
		frame = f.appendFrame(f.frame, b)
		f.frame = frame
	}
	var cr uint64
	if n := len(frame); n > 0 && frame[n-1] == '\r' {
		frame, cr = frame[:n-1], 1
	}
	switch n := int64(len(frame)); {
	case n > int64(f.limit):
		f.count.frames.add(0, 0, cr)
		f.count.discarded.Add(n)
		f.count.oversized.Add(1)
		f.frame = f.frame[:0]
		return nil, &FrameTooLargeError{Size: n, Limit: f.limit, Head: bytes.Clone(frame[:min(n, HeadSize)])}, true
	case n == 0:
		f.count.frames.add(0, 0, cr)
		f.count.emptyLines.Add(1)
		f.frame = f.frame[:0]
		return nil, nil, false
	default:
		f.count.frames.add(1, uint64(n), cr)
		if cr == 1 {
			f.crEnd = f.consumed()
		}
		if n > f.largest {
			f.largest = n
			f.count.largest.Store(n)
		}
		return frame, nil, true
	}
}

// finish reports the end of input once the read buffer is drained.
func (f *Framer) finish() error {
	if !f.over && len(f.frame) == 0 {
		if errors.Is(f.err, io.EOF) {
			return io.EOF
		}
		return f.err
	}
	var e *TruncatedFrameError
	if f.over {
		e = &TruncatedFrameError{Lost: f.overSize, Oversized: true, Head: bytes.Clone(f.head)}
		if f.overCR {
			f.count.discarded.Add(1) // no terminator came after all
		}
		f.over, f.overCR = false, false
	} else {
		e = &TruncatedFrameError{Lost: int64(len(f.frame)), Head: bytes.Clone(f.frame[:min(len(f.frame), HeadSize)])}
		f.count.discarded.Add(int64(len(f.frame)))
		f.frame = f.frame[:0]
	}
	f.count.truncated.Add(1)
	if !errors.Is(f.err, io.EOF) {
		// The reader failed rather than ended: report both.
		f.err = fmt.Errorf("%w (%v)", f.err, e)
		return f.err
	}
	f.err = e
	return e
}
