package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestEmitChunk: a chunk event written without reflection is the line
// json.Marshal makes of it, for every combination of its fields set and
// unset.
func TestEmitChunk(t *testing.T) {
	t.Parallel()
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
		wantAsEmit(t, "emitChunk", (*recorder).emitChunk, start, int64(i), start.Add(time.Duration(i)*time.Millisecond), e)
	}
}

// TestEmitFrame: a frame event written without reflection is the line
// json.Marshal makes of it, with strings and raw values that need escapes
// or are not ASCII (which go by json.Marshal), and every flag.
func TestEmitFrame(t *testing.T) {
	t.Parallel()
	start := time.Now()
	strs := []string{"", "tools/call", `{"jsonrpc":"2.0","id":7,"method":"a\\b"}`, "<script>&</script>", "héllo", "tab\there", "\x7f", "\u2028"}
	raws := []string{"", "7", `"abc"`, `{"a":[1,2]}`, `"<&>"`, `{"a": 1}`, `"é"`}
	i := 0
	for _, s := range strs {
		for _, raw := range raws {
			for flags := range 16 {
				i++
				e := record.Event{Ev: record.EvFrame, Dir: record.DirIn, Off: int64(i) << 20, N: int64(i), T0: int64(i % 3), Kind: record.KindRequest,
					Method: s, Tool: s, Head: s, Hash: "crc32c:0badf00d", Code: int64(-i % 2), Redacted: i % 2,
					CRLF: flags&1 != 0, Unterminated: flags&2 != 0, Gap: flags&4 != 0, Scanned: flags&8 != 0}
				if raw != "" {
					e.ID, e.Token = json.RawMessage(raw), json.RawMessage(raw)
				}
				wantAsEmit(t, "emitFrame", (*recorder).emitFrame, start, int64(i), start.Add(time.Duration(i)*time.Microsecond), e)
			}
		}
	}
	plain := record.Event{Ev: record.EvFrame, Dir: record.DirOut, Kind: record.KindResponse, ID: json.RawMessage(`"a"`), Head: strs[2] + strs[3], Hash: "crc32c:0badf00d"}
	if _, ok := appendFrame(nil, &plain); !ok {
		t.Errorf("appendFrame of %+v went by json.Marshal; want the fast path", plain)
	}
	if b, ok := appendFrame(nil, &record.Event{Ev: record.EvChunk}); ok || len(b) != 0 {
		t.Errorf("appendFrame of a chunk event = %q, %v; want nothing, false", b, ok)
	}
}

// wantAsEmit checks that fast (a recorder's emitChunk or emitFrame)
// writes event e, the seq'th, at at, as emit does, by json.Marshal.
func wantAsEmit(t *testing.T, name string, fast func(*recorder, time.Time, record.Event), start time.Time, seq int64, at time.Time, e record.Event) {
	t.Helper()
	var f, s bytes.Buffer
	rf, rs := &recorder{w: &f, start: start, seq: seq}, &recorder{w: &s, start: start, seq: seq}
	fast(rf, at, e)
	rs.emit(at, e)
	rf.flush()
	rs.flush()
	if f.Len() == 0 || f.String() != s.String() {
		t.Errorf("event %+v:\n%s %s\nemit      %s", e, name, f.String(), s.String())
	}
}

// TestRecorderBatches: events are written in whole lines, one Write per
// flush, the header in a Write of its own, and without waiting for flush
// once flushAt bytes are held; a failed Write stops the record.
func TestRecorderBatches(t *testing.T) {
	t.Parallel()
	var w writeLog
	r := &recorder{w: &w, start: time.Now()}
	r.emit(r.start, record.Event{Ev: record.EvHeader, Header: &record.Header{V: record.SchemaVersion}})
	if len(w.writes) != 1 {
		t.Fatalf("the header was not written at once: %d writes", len(w.writes))
	}
	for i := range 3 {
		r.emitChunk(r.start, record.Event{Ev: record.EvChunk, Dir: record.DirOut, Off: int64(i), N: 1})
	}
	if len(w.writes) != 1 {
		t.Fatalf("events were written before flush: %d writes", len(w.writes))
	}
	r.flush()
	r.flush() // nothing more to write
	if len(w.writes) != 2 || bytes.Count(w.writes[1], []byte("\n")) != 3 {
		t.Fatalf("flush: %d writes, the last %q; want the 3 events in one", len(w.writes), w.writes[len(w.writes)-1])
	}
	for len(w.writes) == 2 {
		r.emitChunk(r.start, record.Event{Ev: record.EvChunk, Dir: record.DirOut, N: 1})
	}
	if n := len(w.writes[2]); n < flushAt || n > flushAt+200 {
		t.Errorf("written without flush at %d bytes; want from %d", n, flushAt)
	}
	var seq int64
	for i, b := range w.writes {
		if len(b) == 0 || b[len(b)-1] != '\n' {
			t.Errorf("write %d does not end a line", i)
		}
		for line := range bytes.Lines(b) {
			var e record.Event
			if err := json.Unmarshal(line, &e); err != nil || e.Seq != seq {
				t.Fatalf("write %d: line %q: %v, seq %d, want %d", i, line, err, e.Seq, seq)
			}
			seq++
		}
	}
	w.fail = true
	r.emitChunk(r.start, record.Event{Ev: record.EvChunk, Dir: record.DirOut, N: 1})
	r.flush()
	if r.failed() == nil {
		t.Error("a failed Write was not reported")
	}
}

// writeLog keeps every Write apart.
type writeLog struct {
	writes [][]byte
	fail   bool
}

func (w *writeLog) Write(p []byte) (int, error) {
	if w.fail {
		return 0, errors.New("disk full")
	}
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}
