package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
)

// The record is NDJSON: one record.Event per line, in the order things
// happened (see order.go), written in whole lines, one write(2) per batch
// of events the observer takes (a killed proxy leaves a readable record). The first line is
// a header (record.EvHeader) with the schema version, the server's argv, the
// names (never the values) of its environment variables, the platform and
// the pipe sizes. Then: spawn; a chunk event for every read of every
// direction with when it was read and when its write returned (replay
// uses them for chunk boundaries and stalls); a frame event per line with
// its offset, size, id, method, kind, head and hash; block and unblock
// events for writes that took BlockEvent or longer; cancel and late
// events; eof, close, signal, exit; fault; drop; verdict; and a summary
// with the metrics at the end. Bodies are kept as head, length and hash
// unless Config.LogBodies asks for every byte. Redaction (JSON paths, and
// keys that look secret) applies before anything is written, heads,
// hashes and bodies alike. The record's files, rotation and the status
// files are the command's (cmd/internal/state), not this package's.

// recorder writes events, numbering them. Only the observer's goroutine
// writes (see order.go), off the forwarding path; the mutex guards the
// error, which Wait reads.
type recorder struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	seq   int64
	err   error     // the first write error; later events are not written
	out   []byte    // encoded lines not written yet (see flush)
	last  time.Time // when the last event happened (see tick)
	// failedErr is err for failed, which must not wait for mu: a Write
	// that does not return holds it.
	failedErr atomic.Pointer[error]
}

// flushAt is how many bytes of encoded lines the recorder holds before it
// writes them without waiting for flush; maxOut is the most capacity it
// keeps between batches.
const (
	flushAt = 64 << 10
	maxOut  = 256 << 10
)

func (r *recorder) since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.Sub(r.start).Microseconds(), 0)
}

// emit writes e as one line (see flush). T is set from at unless e
// already has one.
func (r *recorder) emit(at time.Time, e record.Event) { r.write(at, e, encJSON) }

// emitChunk writes a chunk event that has no bodies (only Dir, Off, N,
// T, WT, Reads and Gap set), as emit would, without reflection: it is the
// most frequent event, one per chunk of every direction (chunk_test.go
// holds it to json.Marshal). Dir is one of the record.Dir constants.
func (r *recorder) emitChunk(at time.Time, e record.Event) { r.write(at, e, encChunk) }

// emitFrame writes a frame event (only the fields frameAsm.frame and
// frameDone set), as emit would, without reflection where its strings
// allow (encode.go).
func (r *recorder) emitFrame(at time.Time, e record.Event) { r.write(at, e, encFrame) }

// How write encodes an event.
const (
	encJSON = iota
	encChunk
	encFrame
)

// write numbers e and encodes it as one line (by appendChunk or
// appendFrame, else by json.Marshal) after those not written yet. The calls
// are direct, so that e stays on the stack on the fast paths: chunk and
// frame events are written per chunk and per line, and would otherwise be
// the proxy's garbage.
func (r *recorder) write(at time.Time, e record.Event, enc int) {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	e.Seq = r.seq
	r.seq++
	if e.T == 0 {
		e.T = r.since(at)
	}
	r.last = at
	line := len(r.out)
	var b []byte
	var err error
	ok := false
	switch enc {
	case encChunk:
		b, ok = appendChunk(r.out, &e), true
	case encFrame:
		b, ok = appendFrame(r.out, &e)
	}
	if !ok {
		b, err = marshalEvent(r.out[:line], e)
	}
	if err != nil {
		r.out = b[:line]
		r.setErr(fmt.Errorf("proxy: encoding a record event: %w", err))
		return
	}
	r.out = append(b, '\n')
	if e.Ev == record.EvHeader || len(r.out) >= flushAt {
		r.flushLocked() // the header alone: a rotating file repeats its first Write
	}
}

// flush writes the lines encoded since the last flush with one Write. The
// observer calls it before it waits for anything, so that the record is
// written as things happen, one Write per batch of events rather than per
// event (a system call per event cost the round trip of small messages the
// most, with a core busy).
func (r *recorder) flush() {
	if r == nil || r.w == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushLocked()
}

func (r *recorder) flushLocked() {
	if r.err != nil || len(r.out) == 0 {
		return
	}
	if _, err := r.w.Write(r.out); err != nil {
		r.setErr(fmt.Errorf("proxy: writing the record: %w", err))
		r.cut(err, bytes.Count(r.out, []byte{'\n'}))
	}
	if r.out = r.out[:0]; cap(r.out) > maxOut {
		r.out = nil
	}
}

// cut writes the record's last line after a failed Write of lost events:
// a record.EvCut event that says why the record ends there. Whether it
// can be written or not, nothing more is.
func (r *recorder) cut(err error, lost int) {
	e := record.Event{Seq: r.seq, T: r.since(time.Now()), Ev: record.EvCut, Events: int64(lost), Err: err.Error(),
		Text: "the record ends here: writing it failed, and nothing after this was recorded; the proxy went on forwarding"}
	r.seq++
	if b, merr := json.Marshal(&e); merr == nil {
		_, _ = r.w.Write(append(b, '\n'))
	}
}

// lastEvent returns when the last event written happened, and whether the
// record is still written.
func (r *recorder) lastEvent() (time.Time, bool) {
	if r == nil || r.w == nil {
		return time.Time{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last, r.err == nil
}

func marshalEvent(b []byte, e record.Event) ([]byte, error) {
	j, err := json.Marshal(&e)
	return append(b, j...), err
}

// setErr records the first error writing the record. r.mu is held.
func (r *recorder) setErr(err error) {
	r.err = err
	r.failedErr.Store(&err)
}

// failed returns the first error writing the record. It never waits.
func (r *recorder) failed() error {
	if r == nil {
		return nil
	}
	if p := r.failedErr.Load(); p != nil {
		return *p
	}
	return nil
}

// setData puts b into e as Data or B64.
func setData(e *record.Event, b []byte) {
	if utf8.Valid(b) {
		e.Data = string(b)
	} else {
		e.B64 = append([]byte(nil), b...)
	}
}
