package mcptest_test

import (
	"io"
	"testing"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// chunks reads one chunk a Read.
type chunks []string

func (c *chunks) Read(p []byte) (int, error) {
	if len(*c) == 0 {
		return 0, io.EOF
	}
	n := copy(p, (*c)[0])
	(*c)[0] = (*c)[0][n:]
	if (*c)[0] == "" {
		*c = (*c)[1:]
	}
	return n, nil
}

// TestFramerFramesOfOneReadStay: the frames a Framer returns from one read
// (Next, then Buffered until it returns false) keep their bytes until the
// next call to Next, not only until the next Buffered. The stdout reader
// parses them held (wire.Parser.ParseHeld), comparing each with the one
// before it where it lies, and releases them before it calls Next again.
func TestFramerFramesOfOneReadStay(t *testing.T) {
	for i, in := range []chunks{
		{"a1\nbb2\nccc3\ndd4\n", "ee5\n"},
		{"x", "y1\nzz2\nwww3\n"}, // the first frame assembled across reads
	} {
		f := pipes.NewFramer(&in, 1<<10)
		longest := 0
		for {
			frame, err := f.Next()
			if err != nil {
				break
			}
			run := [][]byte{frame}
			want := []string{string(frame)}
			for {
				b, ok := f.Buffered()
				if !ok {
					break
				}
				run, want = append(run, b), append(want, string(b))
			}
			longest = max(longest, len(run))
			for j, b := range run {
				if string(b) != want[j] {
					t.Fatalf("input %d: frame %d of a run is %q after the Buffered calls, was %q", i, j, b, want[j])
				}
			}
		}
		if longest < 2 {
			t.Errorf("input %d: the longest run of frames from one read had %d frames, want more than one", i, longest)
		}
	}
}
