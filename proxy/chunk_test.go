package proxy

import (
	"bytes"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestEmitChunk: a chunk event written without reflection is the line
// json.Marshal makes of it, for every combination of its fields set and
// unset.
func TestEmitChunk(t *testing.T) {
	start := time.Now()
	for i := range 1 << 7 {
		e := record.Event{Ev: record.EvChunk}
		bit := func(k int) bool { return i&(1<<k) != 0 }
		if bit(0) {
			e.Dir = record.DirOut
		}
		if bit(1) {
			e.Off = 1 << 40
		}
		if bit(2) {
			e.N = 65536
		}
		if bit(3) {
			e.T = 12
		}
		if bit(4) {
			e.WT = 99
		}
		if bit(5) {
			e.Reads = 3
		}
		e.Gap = bit(6)
		var fast, slow bytes.Buffer
		rf, rs := &recorder{w: &fast, start: start, seq: int64(i)}, &recorder{w: &slow, start: start, seq: int64(i)}
		at := start.Add(time.Duration(i) * time.Millisecond)
		rf.emitChunk(at, e)
		rs.emit(at, e)
		if fast.String() != slow.String() {
			t.Errorf("event %+v:\nemitChunk %s\nemit      %s", e, fast.String(), slow.String())
		}
	}
}
