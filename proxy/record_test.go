package proxy_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
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

func TestLogFilePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	dir := filepath.Join(t.TempDir(), "state", "mcpstdio")
	l, err := proxy.CreateLog(filepath.Join(dir, "a.ndjson"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "a.ndjson"): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	// An existing file or directory with a wider mode is narrowed.
	old := filepath.Join(t.TempDir(), "old.ndjson")
	os.WriteFile(old, nil, 0o644)
	l, err = proxy.CreateLog(old, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	open := filepath.Join(t.TempDir(), "open")
	os.Mkdir(open, 0o755)
	if err := proxy.PrivateDir(open); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{old: 0o600, open: 0o700} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv(proxy.EnvStateDir, "")
	d, err := proxy.DefaultDir()
	if err != nil {
		t.Skip("no home directory here:", err)
	}
	wd, _ := os.Getwd()
	if !filepath.IsAbs(d) || d == wd || !strings.HasSuffix(d, "mcpstdio") {
		t.Errorf("DefaultDir() = %q, want an absolute per-user directory, not the working directory", d)
	}
	t.Setenv(proxy.EnvStateDir, "/elsewhere")
	if d, _ := proxy.DefaultDir(); d != "/elsewhere" {
		t.Errorf("DefaultDir() with %s set = %q", proxy.EnvStateDir, d)
	}
}

// TestRecordPrivacy: environment values never reach the record, and
// redaction applies before anything is written, bodies included.
func TestRecordPrivacy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	l, err := proxy.CreateLog(path, 0, 0)
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

// TestRecordRotation: a record over its size limit continues in a new file
// that starts with the header; old files beyond keep are removed, and the
// files read in order continue the sequence.
func TestRecordRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	l, err := proxy.CreateLog(path, 4000, 2)
	if err != nil {
		t.Fatal(err)
	}
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{Record: l})
	drain(t, r.stdout)
	drain(t, r.stderr)
	for i := range 40 {
		fmt.Fprintf(r.stdin, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	r.stdin.Close()
	r.wait()
	l.Close()
	files := record.Files(path)
	if want := []string{path + ".2", path + ".1", path}; !slices.Equal(files, want) {
		t.Fatalf("record.Files = %q, want %q", files, want)
	}
	next, part := int64(-1), -1
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 4000+1000 {
			t.Errorf("%s has %d bytes, over the 4000-byte limit by more than an event", f, len(b))
		}
		first := true
		err = record.Read(bytes.NewReader(b), func(e record.Event) error {
			if first {
				if e.Ev != record.EvHeader || e.Header.Part <= part {
					return fmt.Errorf("%s starts with %s part %v, want a header after part %d", f, e.Ev, e.Header, part)
				}
				part, first = e.Header.Part, false
				return nil
			}
			if next >= 0 && e.Seq != next {
				return fmt.Errorf("%s: seq %d, want %d", f, e.Seq, next)
			}
			next = e.Seq + 1
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(path + ".3"); err == nil {
		t.Errorf("%s.3 exists: more than keep=2 rotated files", path)
	}
}

// TestStatusFile: a running proxy keeps a status file that names the
// pending request, and removes it when it ends.
func TestStatusFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x.ndjson"+proxy.StatusSuffix)
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{StatusFile: file, StatusInterval: 20 * time.Millisecond})
	drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":600000}}}` + "\n"))
	r.rec.wait(t, "the call", func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 })
	// The file is rewritten on a timer and nothing signals it: poll it,
	// bounded.
	var st proxy.StatusEntry
	deadline := time.Now().Add(bound(t))
	for {
		ents, _ := proxy.ReadStatuses(dir, time.Now())
		if len(ents) == 1 && ents[0].Err == nil && len(ents[0].Status.Pending) == 1 {
			st = ents[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status file naming the pending call: %+v", ents)
		}
		time.Sleep(10 * time.Millisecond)
	}
	p := st.Status.Pending[0]
	if st.Stale || string(p.ID) != "7" || p.Tool != "slow" || p.State != "waiting" || !st.Status.Running {
		t.Errorf("status %+v, pending %+v: want id 7 tools/call slow waiting", st, p)
	}
	r.stdin.Close()
	r.wait()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("status file after the end: %v, want it removed", err)
	}
}

// TestObserverDropsDetailNotTraffic: an observer stuck on a slow record
// loses detail, says so, and every byte is still forwarded at once.
func TestObserverDropsDetailNotTraffic(t *testing.T) {
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
	r.rec.wait(t, "drop", isEv(record.EvDrop))
	r.rec.wait(t, "observer-dropped verdict", verdictOf(record.VerdictDropped))
}

var update = flag.Bool("update", false, "rewrite ../record/testdata/sample.ndjson from a live session")

// TestRecordSample keeps the pinned sample (../record/testdata, checked by
// package record's tests) true to what the proxy writes: a live session's
// events must use only the fields the sample shows for their kind, so a
// new field is added to the sample deliberately (go test -run
// TestRecordSample -update rewrites it).
func TestRecordSample(t *testing.T) {
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
// answer comes 100ms later: late whatever the scheduler does), a fault,
// an end.
func sampleSession(t *testing.T) *recSink {
	r := startRig(t, helperCmd(t, "fake", "-ignore-cancel"), proxy.Config{
		Version: "0.1.0", Stuck: time.Millisecond, Unanswered: time.Hour, BlockEvent: 20 * time.Millisecond, ChunkSize: 4096, ObserverBuffer: 16 << 20,
		Faults: []record.Fault{mustFault(t, "err:latency:delay=1ms")},
	})
	drain(t, r.stderr)
	w := func(s string) { r.stdin.Write([]byte(s + "\n")) }
	w(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sample","version":"1"}}}`)
	w(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	w(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":300000},"_meta":{"progressToken":"p2"}}}`)
	r.rec.wait(t, "block", isEv(record.EvBlock))
	out := drain(t, r.stdout)
	w(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":100}}}`)
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
