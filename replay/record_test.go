package replay_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
)

// TestHeadsOnly: a record without bodies (the proxy's default: each
// frame's head, length and hash) replays in causal mode; what it has
// whole is sent and checked, and what it has only the head of is reported
// Unchecked, which is not a failure.
func TestHeadsOnly(t *testing.T) {
	cfg := recordConfig()
	cfg.LogBodies, cfg.HeadBytes = false, 1024
	file := save(t, "heads.ndjson", recordSession(t, cfg, nil, calls))
	rep := replay.TestServer(t, fakeTarget(t), file, replay.Same())
	if rep.Err() != nil {
		t.Fatalf("a heads-only record against the same server: %s", rep)
	}
	rec, err := replay.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var bigResponse int64 = -1
	whole := 0
	for _, f := range rec.Server {
		if f.Size > 300<<10 {
			bigResponse = f.Seq
		}
		if f.Whole() {
			whole++
		}
	}
	found := false
	for _, d := range rep.Departures {
		if d.Kind == replay.Unchecked && d.Seq == bigResponse {
			found = true
		}
	}
	if !found {
		t.Errorf("the big response (seq %d), recorded as its head only, is not reported unchecked: %s", bigResponse, rep)
	}
	if rep.Checked != whole || whole < 2 {
		t.Errorf("%d messages checked; the record has %d server messages whole (want them all, and at least 2)", rep.Checked, whole)
	}
}

// TestHeadsOnlyProgress: a request the record has only the head of is
// not sent, and the progress notifications it had are not waited for.
func TestHeadsOnlyProgress(t *testing.T) {
	cfg := recordConfig()
	cfg.LogBodies, cfg.HeadBytes = false, 256
	b := recordSession(t, cfg, nil, func(t *testing.T, s *mcptest.Session, _ *sink) {
		p := s.Send("tools/call", map[string]any{
			"name": fakeserver.ToolSlow, "arguments": map[string]any{"steps": 5, "intervalMs": 0},
			"_meta": map[string]any{"progressToken": "a-token-long-enough-to-push-this-request-past-the-head-of-256-bytes"},
		})
		wait(t, p)
		if _, err := s.CallTool(ctxFor(t), fakeserver.ToolEcho, map[string]any{"text": "short"}); err != nil {
			t.Fatal(err)
		}
	})
	rec, err := replay.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Same(), replay.Patience(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() != nil {
		t.Fatalf("a heads-only record against the same server: %s", rep)
	}
	if !strings.Contains(rep.String(), "5 progress notifications for this request, which was not sent, not expected") {
		t.Errorf("the progress of the request left out is not reported unchecked: %s", rep)
	}
}

// TestProxySample: the proxy's own pinned sample (a legacy handshake, a
// stall, a cancel the server ignores, recorded without bodies) replays against
// the fake it was made with.
func TestProxySample(t *testing.T) {
	t.Parallel() // it waits (the patience, the fake): side by side with the other waiting tests
	rep := replay.TestServer(t, fakeTarget(t, "-ignore-cancel"), filepath.Join("..", "record", "testdata", "sample.ndjson"), replay.Same())
	if rep.Err() != nil || rep.Count(replay.Unchecked) == 0 || rep.Checked == 0 {
		t.Errorf("want no departure, the 300 KB response unchecked and the rest checked: %s", rep)
	}
}

// TestRedact: Redact hashes or drops values at load, the record saved
// holds none of them, a frame changed after loading is redacted when
// saved, and the redacted record replays against the same server.
func TestRedact(t *testing.T) {
	const secret = "secret-value-4711"
	b := recordSession(t, recordConfig(), nil, func(t *testing.T, s *mcptest.Session, _ *sink) {
		if _, err := s.CallTool(ctxFor(t), fakeserver.ToolEcho, map[string]any{"text": secret}); err != nil {
			t.Fatal(err)
		}
	})
	if !bytes.Contains(b, []byte(secret)) {
		t.Fatal("the record does not hold the secret to begin with")
	}
	opts := []replay.Option{replay.Redact("params.arguments.text", "result.content.*.text", "-result.resultType")}
	rec, err := replay.Read(bytes.NewReader(b), opts...)
	if err != nil {
		t.Fatal(err)
	}
	// At load: the events, frames and chunks hold no secret.
	all, _ := json.Marshal(rec)
	if bytes.Contains(all, []byte(secret)) {
		t.Errorf("the loaded record still holds %q", secret)
	}
	var hashedReq, hashedResp string
	for _, f := range rec.Host {
		if f.Method == "tools/call" {
			hashedReq = string(wireAt(f.Body, "params", "arguments", "text"))
		}
	}
	for _, f := range rec.Server {
		if bytes.Contains(f.Body, []byte(`"content"`)) {
			hashedResp = string(f.Body)
			if bytes.Contains(f.Body, []byte("resultType")) {
				t.Errorf("a dropped member is still there: %s", f.Body)
			}
		}
	}
	if !strings.HasPrefix(hashedReq, `"sha256:`) || !strings.Contains(hashedResp, hashedReq) {
		t.Errorf("the request's text is %s and the response %s: want the same hash in both", hashedReq, hashedResp)
	}
	// At save: a frame changed after loading is redacted too.
	for i, f := range rec.Host {
		if f.Method == "tools/call" {
			rec.Host[i].Body = bytes.Replace(f.Body, []byte(hashedReq), []byte(`"`+secret+`"`), 1)
		}
	}
	var saved bytes.Buffer
	if err := rec.Write(&saved); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(saved.Bytes(), []byte(secret)) {
		t.Errorf("the saved record holds %q", secret)
	}
	if !bytes.Contains(saved.Bytes(), []byte(hashedReq[1:len(hashedReq)-1])) {
		t.Errorf("the saved record lost the hashed value %s", hashedReq)
	}
	// The saved record is a proxy record, and replays (with the same
	// redaction, which also applies to what the server sends).
	n := 0
	if err := record.Read(bytes.NewReader(saved.Bytes()), func(record.Event) error { n++; return nil }); err != nil || n != len(rec.Events) {
		t.Fatalf("the saved record reads back as %d events (%v), want %d", n, err, len(rec.Events))
	}
	rep := replay.TestServer(t, fakeTarget(t), save(t, "redacted.ndjson", saved.Bytes()), append(opts, replay.Same())...)
	if rep.Checked == 0 {
		t.Errorf("nothing checked: %s", rep)
	}
}

// wireAt returns the value at a path of object keys.
func wireAt(b []byte, keys ...string) json.RawMessage {
	v := json.RawMessage(b)
	for _, k := range keys {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return nil
		}
		v = m[k]
	}
	return v
}

var update = flag.Bool("update", false, "rewrite testdata/session.ndjson from a live session")

// sampleSession is the pinned sample's session: a handshake, calls, a
// stall that blocks the server with a cancel during it, a small flood of
// progress notifications.
func sampleSession(t *testing.T, s *mcptest.Session, rec *sink) {
	stallCancelSized(t, s, rec, 96<<10)
	p := s.Send("tools/call", map[string]any{
		"name": fakeserver.ToolSlow, "arguments": map[string]any{"steps": 20, "intervalMs": 0},
		"_meta": map[string]any{"progressToken": "p"},
	})
	wait(t, p)
}

// TestSample pins the record format replay reads: testdata/session.ndjson
// is a record of a real session (go test -run TestSample -update rewrites
// it; then update the summary below by hand, deliberately). Reading it
// must give the same Record, and it must replay against the fake with no
// departure.
func TestSample(t *testing.T) {
	sample := filepath.Join("testdata", "session.ndjson")
	if *update {
		writeSample(t, sample)
	}
	rec, err := replay.Load(sample)
	if err != nil {
		t.Fatal(err)
	}
	got := summary(rec)
	want := `schema mcpstdio-proxy-record v1, bodies true, pipes 16384/16384
host: request server/discover id=1 whole; request tools/call id=2 whole; request tools/call id=3 whole; notification notifications/cancelled whole; request tools/call id=4 whole; request tools/call id=5 whole
server: response id=1 whole; response id=2 whole; response id=4 whole; 20×notification notifications/progress whole; response id=5 whole
stall out: at byte 278, blocked 16384 bytes at 16662, ended true
cancel id=3 tools/call state waiting
host EOF true, server EOF true, exit code 0`
	if got != want {
		t.Errorf("testdata/session.ndjson reads as\n%s\nwant\n%s", got, want)
	}
	rep := replay.TestServer(t, fakeTarget(t), sample, replay.Same())
	if rep.Checked != len(rec.Server) {
		t.Errorf("%d messages checked, want %d", rep.Checked, len(rec.Server))
	}
}

// summary describes a Record in a few lines: what the sample pins.
func summary(r *replay.Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "schema %s v%d, bodies %v, pipes %d/%d\n", r.Header.Schema, r.Header.V, r.Header.Bodies, r.Header.Pipes.ServerStdout, r.Header.Pipes.HostStdout)
	frames := func(name string, fs []replay.Frame) {
		var parts []string
		for i := 0; i < len(fs); {
			f := fs[i]
			d := f.Kind
			if f.Method != "" {
				d += " " + f.Method
			}
			if len(f.ID) > 0 {
				d += " id=" + string(f.ID)
			}
			d += map[bool]string{true: " whole", false: " head"}[f.Whole()]
			n := 1
			for i+n < len(fs) && len(f.ID) == 0 && fs[i+n].Kind == f.Kind && fs[i+n].Method == f.Method && fs[i+n].Whole() == f.Whole() {
				n++
			}
			if n > 1 {
				d = fmt.Sprintf("%d×%s", n, d)
			}
			parts = append(parts, d)
			i += n
		}
		fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(parts, "; "))
	}
	frames("host", r.Host)
	frames("server", r.Server)
	for _, s := range r.Stalls {
		fmt.Fprintf(&b, "stall %s: at byte %d, blocked %d bytes at %d, ended %v\n", s.Dir, s.At, s.N, s.Off, s.Ended)
	}
	for _, c := range r.Cancels {
		fmt.Fprintf(&b, "cancel id=%s %s state %s\n", c.ID, c.Method, c.State)
	}
	code := "none"
	if r.ExitCode != nil {
		code = fmt.Sprint(*r.ExitCode)
	}
	fmt.Fprintf(&b, "host EOF %v, server EOF %v, exit code %s", r.HostEOF >= 0, r.ServerEOF >= 0, code)
	return b.String()
}

// writeSample rewrites the sample from a live session, with the values
// that differ between runs and machines replaced by fixed ones.
func writeSample(t *testing.T, path string) {
	// Small pipes keep the sample small: 96 KiB block the server behind
	// 16 KiB pipes and chunks (and behind one 64 KiB pipe in a replay
	// where the capacity cannot be set).
	cfg := recordConfig()
	cfg.Version, cfg.PipeCapacity, cfg.ChunkSize = "0.1.0", 16<<10, 16<<10
	b := recordWith(t, cfg, nil, []mcptest.Option{mcptest.WithPipeCapacity(16 << 10)}, sampleSession)
	var out bytes.Buffer
	err := record.Read(bytes.NewReader(b), func(e record.Event) error {
		if h := e.Header; h != nil {
			h.Start, h.PID, h.Go, h.Cwd = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 4242, "go1.26", "/home/user"
			h.Argv, h.EnvKeys = []string{"./fakeserver"}, []string{"HOME", "PATH"}
		}
		if e.PID != 0 {
			e.PID = 4243
		}
		line, err := json.Marshal(e)
		out.Write(append(line, '\n'))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompareProxyRedacted: a value the proxy redacted before recording
// (a secret-looking key, such as sessionId) matches whatever the server
// under test sends there; the rest is still compared.
func TestCompareProxyRedacted(t *testing.T) {
	var rec replay.Record
	want := &replay.Frame{Kind: record.KindResponse, Body: []byte(`{"jsonrpc":"2.0","id":1,"result":{"sessionId":` + record.Redacted + `,"auth":{"token":` + record.Redacted + `},"n":1}}`)}
	if diff, checked := rec.Compare(want, []byte(`{"jsonrpc":"2.0","id":7,"result":{"sessionId":"abc-123","auth":{"token":42},"n":1}}`)); diff != "" || !checked {
		t.Errorf("redacted values compared: checked %v, diff:\n%s", checked, diff)
	}
	if diff, _ := rec.Compare(want, []byte(`{"jsonrpc":"2.0","id":7,"result":{"sessionId":"abc-123","auth":{"token":42},"n":2}}`)); !strings.Contains(diff, `"n"`) || strings.Contains(diff, "sessionId") {
		t.Errorf("a different value next to redacted ones went unseen: diff %q", diff)
	}
}

// TestCompareLarge: messages past 64 KiB compare as smaller ones do: the
// same value is no diff, whatever the id or the spacing; a difference
// anywhere is a diff, within the 8 KiB a departure keeps, even past where
// the diff cuts long arrays and strings short.
func TestCompareLarge(t *testing.T) {
	var rec replay.Record
	items := func(n int, edit func(i int) string) []byte {
		b := []byte(`{"jsonrpc":"2.0","id":1,"result":{"items":[`)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = fmt.Appendf(b, `{"n":%d,"text":"%s"}`, i, edit(i))
		}
		return append(b, "]}}"...)
	}
	item := strings.Repeat("i", 256) // 300 items of it are over 64 KiB
	same := func(int) string { return item }
	want := &replay.Frame{Kind: record.KindResponse, Body: items(300, same)}
	if len(want.Body) < 64<<10 {
		t.Fatalf("the recorded body is %d bytes, want over 64 KiB", len(want.Body))
	}
	spaced := bytes.ReplaceAll(bytes.Replace(items(300, same), []byte(`"id":1`), []byte(`"id":9`), 1), []byte(","), []byte(", "))
	for name, got := range map[string][]byte{"same": items(300, same), "spaced, other id": spaced} {
		if diff, checked := rec.Compare(want, got); diff != "" || !checked {
			t.Errorf("%s: checked %v, diff:\n%s", name, checked, diff)
		}
	}
	for name, tc := range map[string]struct {
		got  []byte
		says string
	}{
		"a page of it":       {items(30, same), "268 more elements"},
		"one element far in": {items(300, func(i int) string { return map[bool]string{true: "changed", false: item}[i == 250] }), "more elements, sha256"},
		"a long string":      {items(300, func(i int) string { return map[bool]string{true: strings.Repeat("x", 4<<10), false: item}[i == 3] }), "xxxxxxxx"},
	} {
		diff, checked := rec.Compare(want, tc.got)
		if !checked || diff == "" || len(diff) > 9<<10 || !strings.Contains(diff, tc.says) {
			t.Errorf("%s: checked %v, a diff of %d bytes, want one under 9 KiB saying %q:\n%.2000s", name, checked, len(diff), tc.says, diff)
		}
	}
	// A long string that differs only in its last byte, past the cut.
	long := strings.Repeat("y", 40<<10)
	want = &replay.Frame{Kind: record.KindResponse, Body: []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + long + `"}}`)}
	got := []byte(`{"jsonrpc":"2.0","id":1,"result":{"text":"` + long[1:] + `z"}}`)
	if diff, _ := rec.Compare(want, got); diff == "" || len(diff) > 9<<10 || !strings.Contains(diff, "40960 bytes in all, sha256") {
		t.Errorf("a long string changed in its last byte: a diff of %d bytes, want one under 9 KiB with the cut part's hash:\n%.2000s", len(diff), diff)
	}
}

// TestHeadsOnlyNothingToCheck: a record with only heads (no -log-bodies,
// every frame longer than its head) checks nothing; its headline says so
// and how to record one that can be checked, and Strict fails it.
func TestHeadsOnlyNothingToCheck(t *testing.T) {
	cfg := recordConfig()
	cfg.LogBodies, cfg.HeadBytes = false, 16
	rec, err := replay.Read(bytes.NewReader(recordSession(t, cfg, nil, calls)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Same())
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(rep.String(), "\n")
	if rep.Checked != 0 || !strings.HasPrefix(head, "replay: nothing checked: the record has only the heads of") || !strings.Contains(head, "-log-bodies") || strings.Contains(head, "as recorded") {
		t.Errorf("headline %q, %d checked; want nothing checked, naming -log-bodies", head, rep.Checked)
	}
	if rep.Err() != nil {
		t.Errorf("Err without Strict: %v, want nil (nothing departs)", rep.Err())
	}
	rep, err = replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Same(), replay.Strict())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() == nil {
		t.Errorf("Err with Strict is nil for a replay that checked nothing: %s", rep)
	}
	// By the rules: nothing was played, so nothing is judged, and the
	// first line counts what was not played.
	rep, err = replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Strict())
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ = strings.Cut(rep.String(), "\n")
	if !strings.Contains(head, "-log-bodies") || !strings.Contains(head, "not played: ") || strings.Contains(head, "PASS") || rep.Err() == nil {
		t.Errorf("by the rules, with Strict: headline %q, Err %v; want not played counted, -log-bodies named, a Strict failure", head, rep.Err())
	}
}

// TestRedactedStrict: a record whose 15 MiB result was redacted (its text
// hashed, testdata/big-redacted.ndjson, made by TestMakeScenarios) replays
// in Strict against the same server: the redacted value is checked as its
// hash, not taken for the head of a 15 MiB message.
func TestRedactedStrict(t *testing.T) {
	t.Parallel()
	rep := replay.TestServer(t, fakeTarget(t), filepath.Join("testdata", "big-redacted.ndjson"), replay.Redact("result.content.*.text"), replay.Same(), replay.Strict())
	if rep.Checked < 2 || !rep.Complete() {
		t.Errorf("want the handshake and the 15 MiB result compared, everything checked: %s", rep)
	}
}
