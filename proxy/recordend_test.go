package proxy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// failingWriter fails its failAt-th Write (1-based) after keeping half of
// it, as a disk that fills up does, and keeps every Write's bytes apart.
type failingWriter struct {
	mu     sync.Mutex
	failAt int
	writes [][]byte
}

var errDiskFull = errors.New("no space left on device (the test's)")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, bytes.Clone(p))
	if len(w.writes) == w.failAt {
		return len(p) / 2, errDiskFull
	}
	return len(p), nil
}

func (w *failingWriter) all() [][]byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([][]byte(nil), w.writes...)
}

// TestRecordCut: a record whose writing fails ends with one cut event
// that says why and how many events went with the failed write; nothing
// is written after it, the status says the record is cut short, Wait
// returns the error, and the traffic is forwarded in full.
func TestRecordCut(t *testing.T) {
	t.Parallel()
	w := &failingWriter{failAt: 2} // the header, then the first batch
	cmd := helperCmd(t, "script", `{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","method":"b"}`)
	r := startRig(t, cmd, proxy.Config{Record: w})
	r.rec, r.recordFails = nil, true // the failing writer is the record here (MultiWriter stops at it)
	got := drain(t, r.stdout)
	poll.Wait(t, bound(t), "the status to say the record is cut", func() bool { return r.p.Status().RecordError != "" }, nil)
	if !strings.Contains(r.p.Status().RecordError, errDiskFull.Error()) {
		t.Errorf("Status().RecordError = %q, want the write's error", r.p.Status().RecordError)
	}
	r.stdin.Close()
	_, err := r.p.Wait()
	if err == nil || !strings.Contains(err.Error(), errDiskFull.Error()) {
		t.Errorf("Wait: %v, want the record's write error", err)
	}
	if n, _ := got(); n != int64(len(`{"jsonrpc":"2.0","method":"a"}`)+len(`{"jsonrpc":"2.0","method":"b"}`)+2) {
		t.Errorf("the host got %d bytes, want both lines", n)
	}
	writes := w.all()
	if len(writes) != 3 {
		t.Fatalf("%d writes to the record, want the header, the failed one and the cut:\n%q", len(writes), writes)
	}
	var cut record.Event
	if err := json.Unmarshal(writes[2], &cut); err != nil || cut.Ev != record.EvCut || !strings.Contains(cut.Err, errDiskFull.Error()) ||
		cut.Events != int64(bytes.Count(writes[1], []byte("\n"))) || bytes.Count(writes[2], []byte("\n")) != 1 {
		t.Errorf("the last write %q (%v): want one cut event naming the error and the %d events lost", writes[2], err, bytes.Count(writes[1], []byte("\n")))
	}
	var before record.Event
	json.Unmarshal(bytes.SplitN(writes[1], []byte("\n"), 2)[0], &before)
	if cut.Seq <= before.Seq {
		t.Errorf("the cut's seq %d is not after the lost events' (from %d)", cut.Seq, before.Seq)
	}
}

// TestRecordTick: while a request waits and nothing else happens, a tick
// event with the metrics so far is written every status interval, so that
// a record cut short by a kill says when it ends.
func TestRecordTick(t *testing.T) {
	t.Parallel()
	cmd := helperCmd(t, "script") // reads stdin, never answers
	r := startRig(t, cmd, proxy.Config{StatusInterval: 50 * time.Millisecond})
	io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`+"\n")
	first := r.rec.wait(t, "a tick", isEv(record.EvTick))
	if first.Metrics == nil || first.Metrics.Requests != 1 {
		t.Errorf("tick %+v: want the metrics so far (1 request)", first)
	}
	r.rec.wait(t, "a second tick", func(e record.Event) bool { return e.Ev == record.EvTick && e.Seq > first.Seq })
	r.stdin.Close()
	r.wait()
}

// TestWaitRecordStuck: a record whose Write does not return (a hung file
// system) does not keep the proxy from ending: Wait returns, bounded,
// with the server's exit and an error saying the summary is missing; the
// observer ends once the Write returns.
func TestWaitRecordStuck(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "exit", "3"), proxy.Config{ExitGrace: 100 * time.Millisecond})
	r.recordFails = true // Close returns Wait's error
	r.rec.wait(t, "spawn", isEv(record.EvSpawn))
	held := r.rec.block()
	defer r.rec.unblock()
	io.WriteString(r.stdin, "a line for the record to hold\n")
	select {
	case <-held:
	case <-time.After(bound(t)):
		t.Fatalf("the observer wrote nothing within %v", bound(t))
	}
	r.stdin.Close() // the server exits 3
	start := time.Now()
	done := make(chan struct{})
	var res *proxy.Result
	var err error
	go func() {
		res, err = r.p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(bound(t)):
		t.Fatalf("Wait did not return within %v with the record's Write stuck", bound(t))
	}
	t.Logf("Wait returned %v after the server's stdin closed", time.Since(start).Round(time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "without the record's summary") {
		t.Errorf("Wait: %v, want an error saying the summary is missing", err)
	}
	if res == nil || res.Exit.Code != 3 {
		t.Errorf("Wait's result %+v: want the server's exit code 3", res)
	}
}
