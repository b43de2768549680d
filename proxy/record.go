package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/record"
)

// recorder writes events, numbering them; safe for concurrent use. Writing
// happens off the forwarding path: only the observer, the lifecycle code
// and faults call it.
type recorder struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	seq   int64
	err   error // the first write error; later events are not written
	buf   []byte
}

func (r *recorder) since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.Sub(r.start).Microseconds(), 0)
}

// emit writes e as one line with one Write call. T is set from at unless e
// already has one.
func (r *recorder) emit(at time.Time, e record.Event) {
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
	b, err := json.Marshal(e)
	if err != nil {
		r.err = fmt.Errorf("proxy: encoding a record event: %w", err)
		return
	}
	r.buf = append(append(r.buf[:0], b...), '\n')
	if _, err := r.w.Write(r.buf); err != nil {
		r.err = fmt.Errorf("proxy: writing the record: %w", err)
	}
}

// failed returns the first error writing the record.
func (r *recorder) failed() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// setData puts b into e as Data or B64.
func setData(e *record.Event, b []byte) {
	if utf8.Valid(b) {
		e.Data = string(b)
	} else {
		e.B64 = append([]byte(nil), b...)
	}
}
