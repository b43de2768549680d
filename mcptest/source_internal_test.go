package mcptest

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

// TestSourceLook: lines of every length around the scanner's threshold and
// the limit, in reads of every size, are all followed: stdout offsets, the
// start of the current line, each long line's id seen where it begins, and
// each oversized line's envelope kept.
func TestSourceLook(t *testing.T) {
	const limit = 9000
	var in bytes.Buffer
	var starts []int64 // where each line with an id begins
	oversized := 0
	for i, n := range []int{10, 150, 4090, 4095, 4096, 4097, 4200, 30, 8999, 9000, 9001, 20000, 5, 600, 600, 600, 4097} {
		starts = append(starts, int64(in.Len()))
		line := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"result":{"x":"`, i)
		line = append(line, bytes.Repeat([]byte("a"), max(0, n-len(line)-3))...)
		line = append(line, `"}}`...)
		if len(line) > limit {
			oversized++
		}
		in.Write(append(line, '\n'))
	}
	in.WriteString(`{"jsonrpc":"2.0","id":99,"res`) // a line not yet ended
	data := in.Bytes()
	for _, size := range []int{1, 7, 100, 4096, 4097, 5000, 64 << 10} {
		var seen []int64
		src := newStdoutSource(nil, limit, func(start int64, e wire.Envelope) { seen = append(seen, start) })
		for b := data; len(b) > 0; {
			n := min(size, len(b))
			src.look(b[:n])
			b = b[n:]
		}
		last := int64(bytes.LastIndexByte(data, '\n') + 1)
		if src.offset != int64(len(data)) || src.lineStart != last {
			t.Errorf("reads of %d: offset %d, line start %d; want %d, %d", size, src.offset, src.lineStart, len(data), last)
		}
		var long []int64 // the lines over the scanner's threshold: their ids are seen
		for i, st := range starts {
			end := int64(len(data))
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			if end-st-1 > int64(src.scanFrom) {
				long = append(long, st)
			}
		}
		if fmt.Sprint(seen) != fmt.Sprint(long) {
			t.Errorf("reads of %d: ids seen at %v; want at %v", size, seen, long)
		}
		if len(src.oversized) != oversized {
			t.Errorf("reads of %d: %d oversized envelopes kept; want %d", size, len(src.oversized), oversized)
		}
	}
}
