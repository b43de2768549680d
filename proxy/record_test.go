package proxy_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestRecordPrivacy: environment values never reach the record, and
// redaction applies before anything is written, bodies included.
func TestRecordPrivacy(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	l, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd := helperCmd(t, "fake")
	cmd.Env = append(cmd.Env, "MCPSTDIO_SECRET_ENV=env-value-4711")
	r := startRig(t, cmd, proxy.Config{Record: l, LogBodies: true, Redact: []string{"params.arguments.text", "result.content.*.text"}})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"text-value-8812","password":"pw-value-9923"}}}` + "\n"))
	r.rec.wait(t, "response", func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirOut && e.WT > 0 })
	r.stdin.Close()
	r.wait()
	l.Close()
	if n, _ := out(); n == 0 {
		t.Fatal("no response")
	}
	rec, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"env-value-4711", "text-value-8812", "pw-value-9923"} {
		if bytes.Contains(rec, []byte(secret)) {
			t.Errorf("the record contains %q", secret)
		}
	}
	var header *record.Header
	var redacted []int
	var body []byte
	record.Read(bytes.NewReader(rec), func(e record.Event) error {
		if e.Ev == record.EvHeader {
			header = e.Header
		}
		if e.Ev == record.EvChunk && e.Dir == record.DirIn {
			body = append(body, e.ChunkBytes()...)
		}
		if e.Ev == record.EvFrame {
			redacted = append(redacted, e.Redacted)
		}
		return nil
	})
	if header == nil || !slices.Contains(header.EnvKeys, "MCPSTDIO_SECRET_ENV") {
		t.Errorf("the header does not name the environment variable MCPSTDIO_SECRET_ENV")
	}
	if !slices.Equal(redacted, []int{2, 1}) {
		t.Errorf("values redacted per frame %v, want [2 1] (request: text and password; response: text)", redacted)
	}
	// With bodies, the chunks hold every byte, redacted.
	if want := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"[redacted]","password":"[redacted]"}}}` + "\n"; string(body) != want {
		t.Errorf("the host's bytes in the record's chunks:\n%s\nwant\n%s", body, want)
	}
	if !bytes.Contains(rec, []byte(`\"password\":\"[redacted]\"`)) {
		t.Errorf("the record does not show the redacted password:\n%s", rec)
	}
}

// TestStatusHook: a running proxy reports its status through
// Config.OnStatus, naming the pending request.
func TestStatusHook(t *testing.T) {
	t.Parallel()
	statuses := make(chan proxy.Status, 1)
	hook := func(st proxy.Status) error {
		select {
		case statuses <- st:
		default: // the test has one to look at already
		}
		return nil
	}
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{OnStatus: hook, StatusInterval: 20 * time.Millisecond})
	drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":600000}}}` + "\n"))
	r.rec.wait(t, "the call", func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 })
	deadline := time.After(bound(t))
	var st proxy.Status
	for len(st.Pending) != 1 {
		select {
		case <-deadline:
			t.Fatalf("no status naming the pending call; the last: %+v", st)
		case st = <-statuses:
		}
	}
	if p := st.Pending[0]; string(p.ID) != "7" || p.Tool != "slow" || p.State != "waiting" || !st.Running {
		t.Errorf("status %+v, pending %+v: want id 7 tools/call slow waiting", st, p)
	}
	r.stdin.Close()
	r.wait()
}

// TestStatusHookError: a failing OnStatus is recorded once, and the
// traffic goes on.
func TestStatusHookError(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{OnStatus: func(proxy.Status) error { return errors.New("disk full") }, StatusInterval: time.Millisecond})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	e := r.rec.wait(t, "error", isEv(record.EvError))
	r.rec.wait(t, "the response", func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirOut && e.WT > 0 })
	r.stdin.Close()
	r.wait()
	if n, _ := out(); n == 0 || !strings.Contains(e.Err, "disk full") {
		t.Errorf("error event %+v, %d bytes to the host: want the hook's error recorded and the response forwarded", e, n)
	}
	n := 0
	for _, e := range r.rec.all() {
		if e.Ev == record.EvError {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d error events, want 1", n)
	}
}

// TestObserverDropsDetailNotTraffic: an observer stuck on a slow record
// loses detail, says so, and every byte is still forwarded at once, on
// each forwarding path, and by the rule (which, with the observer's pipe
// full, splices without detail).
func TestObserverDropsDetailNotTraffic(t *testing.T) {
	onPaths(t, []string{"copy", "splice", "auto"}, testObserverDropsDetailNotTraffic)
}

func testObserverDropsDetailNotTraffic(t *testing.T, path string) {
	const n = 4 << 20
	r := startRig(t, helperCmd(t, "bytes", fmt.Sprint(n), filepath.Join(t.TempDir(), "in")), proxy.Config{ObserverBuffer: 64 << 10})
	r.rec.block()
	defer r.rec.unblock()
	out := drain(t, r.stdout)
	errs := drain(t, r.stderr)
	in := streamBytes("in", n)
	go func() {
		r.stdin.Write(in)
		r.stdin.Close()
	}()
	// All traffic passes while the observer waits on the record.
	if got, h := out(); h != sum(streamBytes("out", n)) {
		t.Errorf("host got %d bytes of stdout (%s), want them all", got, h)
	}
	if got, h := errs(); h != sum(streamBytes("err", n/4)) {
		t.Errorf("host got %d bytes of stderr (%s), want them all", got, h)
	}
	r.rec.unblock()
	res := r.wait()
	if m := res.Status.Metrics; m.DroppedBytes == 0 || m.StdoutBytes != int64(len(streamBytes("out", n))) {
		t.Errorf("metrics %+v: want dropped detail counted and every byte counted", m)
	}
	wantPath(t, r.p, path, int(proxy.DOut), int64(len(streamBytes("out", n))))
	r.rec.wait(t, "drop", isEv(record.EvDrop))
	r.rec.wait(t, "observer-dropped verdict", verdictOf(record.VerdictDropped))
	// The summary says it first: the other verdicts stand on what the
	// observer saw.
	if vs := res.Verdicts; len(vs) == 0 || vs[0].Kind != record.VerdictDropped {
		t.Errorf("summary verdicts %+v: want the lost detail first", vs)
	}
}

// TestEndLostAtExitMarked: when the observer runs out of ExitGrace with
// the end of the server's output still to handle (here it is stuck on a
// record that takes no write until the proxy is ending, from before the
// server's second flood), the record says so: a drop event for stdout and
// a gap frame that reaches the stream's end, so that a replay calls
// nothing in it extra. (It gave neither: the record looked whole and
// ended early.)
func TestEndLostAtExitMarked(t *testing.T) {
	// Not parallel: it finds its proxy's Wait in finish by the goroutines'
	// stacks, and another test's proxy ending beside it would match too.
	const size, count = 4 << 10, 64
	const total = 2 * size * count
	r := startRig(t, helperCmd(t, "flood", fmt.Sprint(size), fmt.Sprint(count)), proxy.Config{ExitGrace: time.Nanosecond, ObserverBuffer: 64 << 20})
	held := r.rec.block()
	defer r.rec.unblock()
	got := make(chan int64, 1)
	go func() {
		n, _ := io.CopyN(io.Discard, r.stdout, total)
		got <- n
	}()
	drain(t, r.stderr)
	timer := time.NewTimer(bound(t))
	defer timer.Stop()
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	select {
	case <-held: // the observer took the first flood and is stuck writing it
	case <-timer.C:
		t.Fatalf("the observer wrote nothing within %v", bound(t))
	}
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"))
	select {
	case n := <-got:
		if n != total {
			t.Fatalf("the host got %d bytes, want %d", n, total)
		}
	case <-timer.C:
		t.Fatalf("the host did not get the two floods within %v", bound(t))
	}
	r.stdin.Close()
	ended := make(chan *proxy.Result, 1)
	go func() { ended <- r.wait() }()
	// The observer's time runs out once Wait is in finish, past setting
	// its cutoff (ExitGrace is 1ns), waiting to hand it the end: then let
	// the record take writes again.
	waitStack(t, "proxy.(*observer).finish(", "select")
	r.rec.unblock()
	res := <-ended
	m := res.Status.Metrics
	if m.DroppedBytes == 0 || m.StdoutBytes != total {
		t.Fatalf("metrics %+v: want the stdout the observer had no time for counted as dropped; record:\n%s", m, r.rec.text())
	}
	var drop, gap *record.Event
	for _, e := range r.rec.all() {
		switch {
		case e.Ev == record.EvDrop && e.Dir == record.DirOut:
			drop = &e
		case e.Ev == record.EvFrame && e.Dir == record.DirOut && e.Gap:
			gap = &e
		}
	}
	if drop == nil || drop.Bytes == 0 {
		t.Errorf("no drop event for stdout (%+v): the record must say detail was lost", drop)
	}
	if gap == nil || gap.Off+gap.N != total {
		t.Errorf("gap frame %+v: want one that reaches the end of the %d bytes", gap, total)
	}
}

// waitStack waits until a goroutine whose stack holds s waits in state
// (as runtime.Stack names it, "chan send", "select"). Nothing announces that a
// goroutine has reached a blocking send, so it looks every 5ms, bounded.
func waitStack(t *testing.T, s, state string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(bound(t))
	for {
		for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, s) && strings.Contains(g[:strings.IndexByte(g, '\n')+1], "["+state) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no goroutine in %s waiting in %s after %v", s, state, bound(t))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var update = flag.Bool("update", false, "rewrite ../record/testdata/sample.ndjson from a live session")

// TestRecordSample keeps the pinned sample (../record/testdata, checked by
// package record's tests) true to what the proxy writes: a live session's
// events must use only the fields the sample shows for their kind, so a
// new field is added to the sample deliberately (go test -run
// TestRecordSample -update rewrites it).
func TestRecordSample(t *testing.T) {
	t.Parallel()
	sample := filepath.Join("..", "record", "testdata", "sample.ndjson")
	if *update {
		writeSample(t, sample)
	}
	b, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var m map[string]json.RawMessage
		var ev string
		if err := json.Unmarshal(line, &m); err != nil || json.Unmarshal(m["ev"], &ev) != nil {
			t.Fatalf("sample line %q: %v", line, err)
		}
		if kinds[ev] == nil {
			kinds[ev] = map[string]bool{}
		}
		for k := range m {
			kinds[ev][k] = true
		}
	}
	// A live session uses only fields the sample shows.
	rec := sampleSession(t)
	for _, line := range rec.lines {
		var m map[string]json.RawMessage
		json.Unmarshal(line, &m)
		var ev string
		json.Unmarshal(m["ev"], &ev)
		for k := range m {
			if !kinds[ev][k] {
				t.Errorf("a live %s event has field %q, which the sample does not show: update the sample (-update) and the docs", ev, k)
			}
		}
	}
}

// sampleSession runs a session with most kinds of events: a handshake, a
// stall that blocks the host's stdout, a cancel the server ignores (its
// answer comes about 1s after the call: late unless the test took that long to
// send the cancel, which under -race with a core kept busy took over the
// 100ms this once allowed), a fault, an end.
func sampleSession(t *testing.T) *recSink {
	r := startRig(t, helperCmd(t, "fake", "-ignore-cancel"), proxy.Config{
		Version: "0.1.0", Stuck: time.Millisecond, Unanswered: time.Hour, BlockEvent: 20 * time.Millisecond, ChunkSize: 4096, ObserverBuffer: 16 << 20,
		StatusInterval: time.Hour, // no tick events: the sample pins the events of a session, a tick is one of a quiet spell
		Faults:         []record.Fault{mustFault(t, "err:latency:delay=1ms")},
	})
	drain(t, r.stderr)
	w := func(s string) { r.stdin.Write([]byte(s + "\n")) }
	w(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sample","version":"1"}}}`)
	w(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":300000},"_meta":{"progressToken":"p2"}}}`)
	r.rec.wait(t, "block", isEv(record.EvBlock))
	out := drain(t, r.stdout)
	w(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":1000}}}`)
	r.rec.wait(t, "call 3 written", func(e record.Event) bool {
		return e.Ev == record.EvFrame && e.Dir == record.DirIn && string(e.ID) == "3"
	})
	r.rec.wait(t, "call 3 written", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.Off > 300 && e.WT > 0
	})
	w(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3,"reason":"sample"}}`)
	r.rec.wait(t, "late", isEv(record.EvLate))
	r.stdin.Close()
	out()
	r.wait()
	return r.rec
}

// writeSample rewrites the sample from a live session, with the values
// that differ between runs and machines replaced by fixed ones.
func writeSample(t *testing.T, path string) {
	rec := sampleSession(t)
	var buf bytes.Buffer
	for _, e := range rec.all() {
		if e.Header != nil {
			h := e.Header
			h.Start, h.PID, h.Go, h.Cwd = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 4242, "go1.26", "/home/user"
			h.Argv = []string{"./myserver", "--stdio"}
			h.EnvKeys = []string{"HOME", "PATH"}
			sort.Strings(h.EnvKeys)
		}
		if e.PID != 0 {
			e.PID = 4243
		}
		b, _ := json.Marshal(e)
		buf.Write(append(b, '\n'))
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
