package page

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestTailLongLine: a record being followed whose writer is in a line
// longer than record.MaxLine is not held in memory between updates; once
// the line ends it is named with its size, and the events after it are
// read. A whole long line added between two updates is skipped where it
// is found, not read whole.
func TestTailLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	head := `{"seq":0,"t":0,"ev":"header","header":{"v":1,"schema":"mcpstdio-proxy-record"}}` + "\n" + `{"seq":1,"t":1,"ev":"spawn"}` + "\n"
	half := int64(record.MaxLine + record.MaxLine/2)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(head + `{"seq":2,"t":2,"ev":"frame","text":"`)
	writeAs(t, f, half)
	tl := newTail(path)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	tl.update(0)
	if grew := int64(heap()) - int64(before); grew > record.MaxLine/2 {
		t.Errorf("after an update in a line of %d bytes so far, the heap is %d bytes larger: the line is held", half, grew)
	}
	if tl.err != nil {
		t.Errorf("after the first update: err %v, want none yet", tl.err)
	}
	writeAs(t, f, half)
	f.WriteString(`"}` + "\n" + `{"seq":3,"t":5,"ev":"exit","code":0}` + "\n")
	tl.update(0)
	tl.update(0)
	if tl.err == nil || !strings.Contains(tl.err.Error(), "over the 16777216-byte limit") {
		t.Errorf("err %v, want the long line named", tl.err)
	}
	if tl.sess.End != 5 {
		t.Errorf("the session ends at %d µs, want 5: the exit after the long line was not read", tl.sess.End)
	}
	// A whole long line and an event after it, added between two updates:
	// the line is skipped where it is found, not read whole, the event read.
	f.WriteString(`{"seq":4,"t":6,"ev":"frame","text":"`)
	writeAs(t, f, record.MaxLine)
	f.WriteString(`"}` + "\n" + `{"seq":5,"t":9,"ev":"spawn"}` + "\n")
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	tl.update(0)
	runtime.ReadMemStats(&m1)
	if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > record.MaxLine/2 {
		t.Errorf("an update over a whole line longer than record.MaxLine allocated %d bytes: the line was read", alloc)
	}
	if tl.sess.End != 9 {
		t.Errorf("the session ends at %d µs, want 9: the event after the second long line was not read (err %v)", tl.sess.End, tl.err)
	}
}

// writeAs writes n bytes of 'a' to f, a MiB at a time.
func writeAs(t *testing.T, f *os.File, n int64) {
	t.Helper()
	b := bytes.Repeat([]byte("a"), 1<<20)
	for n > 0 {
		k := min(n, int64(len(b)))
		if _, err := f.Write(b[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
}
