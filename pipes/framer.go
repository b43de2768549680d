package pipes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
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
	Pending     int64 // bytes of the current unfinished frame, not yet accounted elsewhere
}

// Framer splits a byte stream into newline-terminated frames, as MCP's stdio
// transport frames JSON-RPC messages. It does not parse or validate what the
// frames contain.
//
// Memory stays within the limit plus a 64 KiB read buffer whatever arrives:
// a frame longer than the limit is skipped up to its newline without being
// stored. A Framer is not safe for concurrent calls to Next; Stats may be
// called from any goroutine.
type Framer struct {
	r     io.Reader
	limit int

	rbuf       []byte // read buffer
	rpos, rend int    // unconsumed bytes are rbuf[rpos:rend]
	frame      []byte // the frame being assembled, at most limit+1 bytes
	head       []byte // head of the frame being discarded
	over       bool   // discarding an oversized frame
	overSize   int64  // its bytes so far
	overCR     bool   // its last byte was '\r'
	err        error  // sticky read error

	mu    sync.Mutex
	stats FramerStats
}

// NewFramer returns a Framer reading from r that accepts frames of at most
// limit bytes, not counting the line terminator. A limit below 1 is taken as 1.
func NewFramer(r io.Reader, limit int) *Framer {
	if limit < 1 {
		limit = 1
	}
	return &Framer{r: r, limit: limit, rbuf: make([]byte, readSize)}
}

// Limit returns the Framer's frame limit in bytes.
func (f *Framer) Limit() int { return f.limit }

// Stats returns a snapshot of the Framer's counters.
func (f *Framer) Stats() FramerStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
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
	f.frame = f.frame[:0]
	for {
		if f.rpos == f.rend {
			if f.err != nil {
				return nil, f.finish()
			}
			if err := f.fill(); err != nil {
				f.err = err
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

// appendFrame appends b to dst, growing it at most to limit+1 bytes of
// capacity so that one long line costs O(limit) memory in all.
func (f *Framer) appendFrame(dst, b []byte) []byte {
	if need := len(dst) + len(b); need > cap(dst) {
		c := min(max(2*cap(dst), need, 4096), f.limit+1+readSize)
		grown := make([]byte, len(dst), c)
		copy(grown, dst)
		dst = grown
	}
	return append(dst, b...)
}

// fill reads once into the empty read buffer. A reader that returns no bytes
// and no error many times in a row is reported, as bufio does.
func (f *Framer) fill() error {
	for range 100 {
		if err := f.fill1(); err != errNoBytes {
			return err
		}
	}
	return io.ErrNoProgress
}

var errNoBytes = errors.New("no bytes")

func (f *Framer) fill1() error {
	n, err := f.r.Read(f.rbuf)
	if n < 0 || n > len(f.rbuf) {
		return fmt.Errorf("pipes: reader returned %d bytes for a %d-byte buffer", n, len(f.rbuf))
	}
	f.rpos, f.rend = 0, n
	f.mu.Lock()
	f.stats.Bytes += int64(n)
	f.stats.Pending += int64(n)
	f.mu.Unlock()
	if err == nil && n == 0 {
		return errNoBytes
	}
	return err
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
	f.head = f.head[:0]
	stored := f.frame
	f.frame = f.frame[:0]
	f.discard(stored)
	f.discard(b)
}

// discard drops bytes of an oversized frame.
func (f *Framer) discard(b []byte) {
	if len(b) == 0 {
		return
	}
	if len(f.head) < HeadSize {
		f.head = append(f.head, b[:min(len(b), HeadSize-len(f.head))]...)
	}
	f.overSize += int64(len(b))
	f.overCR = b[len(b)-1] == '\r'
	f.mu.Lock()
	f.stats.Discarded += int64(len(b))
	f.stats.Pending -= int64(len(b))
	f.mu.Unlock()
}

// endLine completes the current line with its final bytes b (the "\n" is
// consumed). ok reports whether Next should return frame, err.
func (f *Framer) endLine(b []byte) (frame []byte, err error, ok bool) {
	if f.over {
		f.discard(b)
		size, term := f.overSize, int64(1)
		if f.overCR {
			size, term = size-1, 2
		}
		f.mu.Lock()
		f.stats.Oversized++
		// The '\r' was counted as discarded; it is a terminator.
		f.stats.Discarded -= term - 1
		f.stats.Terminators += term
		f.stats.Pending -= 1
		f.mu.Unlock()
		f.over = false
		head := f.head[:min(int64(len(f.head)), size)] // not the '\r' of "\r\n"
		return nil, &FrameTooLargeError{Size: size, Limit: f.limit, Head: bytes.Clone(head)}, true
	}
	if len(f.frame) == 0 {
		frame = b // the whole line is in the read buffer: no copy
	} else {
		frame = f.appendFrame(f.frame, b)
		f.frame = frame
	}
	term := int64(1)
	if n := len(frame); n > 0 && frame[n-1] == '\r' {
		frame, term = frame[:n-1], 2
	}
	if len(frame) > f.limit {
		f.mu.Lock()
		f.stats.Oversized++
		f.stats.Discarded += int64(len(frame))
		f.stats.Terminators += term
		f.stats.Pending -= int64(len(frame)) + term
		f.mu.Unlock()
		f.frame = f.frame[:0]
		return nil, &FrameTooLargeError{Size: int64(len(frame)), Limit: f.limit, Head: bytes.Clone(frame[:min(len(frame), HeadSize)])}, true
	}
	f.mu.Lock()
	f.stats.Terminators += term
	f.stats.Pending -= int64(len(frame)) + term
	if len(frame) == 0 {
		f.stats.EmptyLines++
		f.mu.Unlock()
		f.frame = f.frame[:0]
		return nil, nil, false
	}
	f.stats.Frames++
	f.stats.FrameBytes += int64(len(frame))
	f.stats.Largest = max(f.stats.Largest, int64(len(frame)))
	f.mu.Unlock()
	return frame, nil, true
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
		f.over = false
	} else {
		e = &TruncatedFrameError{Lost: int64(len(f.frame)), Head: bytes.Clone(f.frame[:min(len(f.frame), HeadSize)])}
		f.mu.Lock()
		f.stats.Discarded += int64(len(f.frame))
		f.stats.Pending -= int64(len(f.frame))
		f.mu.Unlock()
		f.frame = f.frame[:0]
	}
	f.mu.Lock()
	f.stats.Truncated++
	f.mu.Unlock()
	if !errors.Is(f.err, io.EOF) {
		// The reader failed rather than ended: report both.
		f.err = fmt.Errorf("%w (%v)", f.err, e)
		return f.err
	}
	f.err = e
	return e
}
