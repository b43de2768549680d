package pipes

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestFrameCountFlush crosses every field's flush point of the packed word,
// and a byte count too large to pack, and checks the totals stay exact.
func TestFrameCountFlush(t *testing.T) {
	var c frameCount
	var frames, n, crs int64
	add := func(f, b, r uint64) {
		t.Helper()
		c.add(f, b, r)
		frames, n, crs = frames+int64(f), n+int64(b), crs+int64(r)
		if gf, gn, gr := c.load(); gf != frames || gn != n || gr != crs {
			t.Fatalf("after add(%d, %d, %d): load() = %d, %d, %d; want %d, %d, %d", f, b, r, gf, gn, gr, frames, n, crs)
		}
	}
	for i := range 3 * 8192 {
		add(1, uint64(i%300), uint64(i%2))
	}
	for range 3 * 8192 {
		add(0, 0, 1) // '\r's alone, as of empty lines
	}
	add(1, 1<<34, 0)   // too large to pack
	add(1, 1<<34-1, 1) // packs, and sets the bytes field's top bit
	add(1, 1<<35, 0)   // too large again
	for range 3 {
		add(1, 1<<33, 1) // fills the bytes field in a few steps
	}
}

// SplitReader reads in whole, one byte at a time, or half of what is asked,
// as split%3 chooses. It is exported for the fuzz tests of package
// pipes_test, and exists only in tests.
func SplitReader(in []byte, split uint8) io.Reader {
	var r io.Reader = bytes.NewReader(in)
	switch split % 3 {
	case 1:
		r = iotest.OneByteReader(r)
	case 2:
		r = iotest.HalfReader(r)
	}
	return r
}

// FuzzFramerBufferSize checks that the read buffer's size changes nothing
// but memory: a Framer with a buffer of a few bytes, which reads long frames
// straight into the frame and hands bytes back to its buffer, returns the
// same frames, errors and counters as one with the default 64 KiB buffer.
func FuzzFramerBufferSize(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\n"), 2, uint8(3), uint8(0))
	f.Add([]byte(strings.Repeat("x", 300)+"\r\nok\n"+strings.Repeat("y", 40)+"\n"), 100, uint8(4), uint8(1))
	f.Add([]byte(strings.Repeat("z", 90)+"\r"), 200, uint8(8), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, limit int, size, split uint8) {
		limit = 1 + (limit&0x7fffffff)%512
		want := NewFramer(SplitReader(in, split), limit)
		got := newFramer(SplitReader(in, split), limit, 1+int(size%64))
		for i := 0; ; i++ {
			wf, werr := want.Next()
			gf, gerr := got.Next()
			if string(gf) != string(wf) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Fatalf("Next() #%d with a %d-byte buffer = %q, %v; with 64 KiB: %q, %v", i, len(got.rbuf), gf, gerr, wf, werr)
			}
			ws, gs := want.Stats(), got.Stats()
			done := werr != nil && !errors.As(werr, new(*FrameTooLargeError))
			if !done {
				// Only what was read ahead may differ.
				ws.Bytes, ws.Pending, gs.Bytes, gs.Pending = 0, 0, 0, 0
			}
			if gs != ws {
				t.Fatalf("after Next() #%d, Stats() with a %d-byte buffer = %+v; with 64 KiB: %+v", i, len(got.rbuf), gs, ws)
			}
			if cap(got.frame) > limit+1+len(got.rbuf) {
				t.Fatalf("frame buffer of %d bytes with limit %d and a %d-byte read buffer", cap(got.frame), limit, len(got.rbuf))
			}
			if done {
				return
			}
		}
	})
}
