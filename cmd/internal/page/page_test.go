package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

var (
	sampleRecord  = filepath.Join("testdata", "sample.ndjson")
	sessionRecord = filepath.Join("testdata", "session.ndjson")
)

func readFile(t *testing.T, path string) *Session {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestPendingAtEnd: in the replay sample the host cancelled id 3 and
// closed stdin before its answer; it is pending at the end, with its
// cancel.
func TestPendingAtEnd(t *testing.T) {
	t.Parallel()
	s := readFile(t, sessionRecord)
	if len(s.Pending) != 1 {
		t.Fatalf("pending = %+v, want id 3 only", s.Pending)
	}
	p := s.Pending[0]
	if string(p.ID) != "3" || p.State != "waiting" || p.Cancel != 79290 || p.CancelAt != "waiting" || p.Delivered != 0 {
		t.Errorf("pending = %+v, want id 3 waiting, cancelled at 79290 while waiting", p)
	}
	var text bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pending at the end\n  host → server id 3 (tools/call slow): waiting, sent at +0.076s, 22ms before the record ends, cancelled at +0.079s\n",
		"+0.051s  BLOCK a write of 16 KiB to the host's stdout blocked\n",
		"+0.091s  UNBLOCK the host's stdout after 40ms\n",
		"… 19 lines folded, over 226µs, 2623 bytes of frames: 19 out notification notifications/progress\n",
		"lost detail\n  none",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// TestTextSample: the summary of the pinned sample names what happened in
// words: the verdicts, the block with its bytes and duration, the cancel
// and the late answer at their times; no environment value, no working
// directory.
func TestTextSample(t *testing.T) {
	t.Parallel()
	s := readFile(t, sampleRecord)
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"server  ./myserver --stdio\n",
		"pipes   server stdin 64 KiB, stdout 64 KiB, stderr 64 KiB; host stdin 64 KiB, stdout 64 KiB, stderr 64 KiB\n",
		"2 environment variable names, no values",
		"  - cancel for id 3 (tools/call slow) forwarded to the server at 72ms; its response (91 bytes) began 95ms after the cancel\n",
		"requests 3, responses 3,",
		"blocked writes: server's stdin 0s, host's stdout 24ms, host's stderr 0s",
		"pending at the end\n  none\n",
		"+0.042s  BLOCK a write of 4096 bytes to the host's stdout blocked\n",
		"+0.065s  UNBLOCK the host's stdout after 24ms\n",
		"+0.072s  CANCEL cancel of id 3 (tools/call slow) read while it was waiting (sample)\n",
		"+0.167s  LATE id 3 (tools/call slow): its response began 95ms after the cancel was forwarded\n",
		"+0.182s  EXIT the server ended: exit status 0\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "/home/user") {
		t.Errorf("summary shows the working directory:\n%s", out)
	}
}

// synthetic returns a record of n request/response pairs on the wire,
// with chunk events, one blocked write in the middle and the last request
// never answered. The same n gives the same bytes, made once (encoding
// them is most of a large test's CPU under -race): callers only read them.
func synthetic(n int) []byte {
	if b, ok := syntheticMade.Load(n); ok {
		return b.([]byte)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	h := &record.Header{V: record.SchemaVersion, Schema: record.SchemaName, Argv: []string{"srv"}, EnvKeys: []string{"HOME"}, Head: 256}
	seq := int64(0)
	emit := func(e record.Event) {
		e.Seq = seq
		seq++
		enc.Encode(e)
	}
	emit(record.Event{Ev: record.EvHeader, Header: h})
	var inOff, outOff int64
	t := int64(1000)
	for i := 1; i <= n; i++ {
		id := json.RawMessage(fmt.Sprint(i))
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: t, T0: t, Off: inOff, N: int64(len(req)), Kind: record.KindRequest, ID: id, Method: "tools/call", Tool: "echo", Head: req})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirIn, T: t, Off: inOff, N: int64(len(req) + 1), WT: t + 5})
		inOff += int64(len(req) + 1)
		if i == n {
			break
		}
		if i == n/2 {
			emit(record.Event{Ev: record.EvBlock, Dir: record.DirOut, T: t + 100_000, Since: t + 10, N: 65536})
			emit(record.Event{Ev: record.EvUnblock, Dir: record.DirOut, T: t + 2_000_000, Since: t + 10, N: 65536, Dur: 2_000_000})
			t += 2_000_000
		}
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T: t + 20, T0: t + 20, Off: outOff, N: int64(len(resp)), Kind: record.KindResponse, ID: id, Head: resp})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirOut, T: t + 20, Off: outOff, N: int64(len(resp) + 1), WT: t + 30})
		outOff += int64(len(resp) + 1)
		t += 50
	}
	made, _ := syntheticMade.LoadOrStore(n, b.Bytes())
	return made.([]byte)
}

var syntheticMade sync.Map // n → synthetic(n)

// TestLargeRecord: a record of 100,000 frames (10,000 under the race
// detector, which is 10 times slower) reads and renders as HTML in bounded
// time and size: frames are binned, the page says so, and the unanswered
// request is still drawn as a span with its frame.
func TestLargeRecord(t *testing.T) {
	t.Parallel()
	n := 50_000
	if raceEnabled {
		n = 5_000
	}
	rec := synthetic(n)
	start := time.Now()
	s, err := Read(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	read := time.Since(start)
	if len(s.Frames) != 2*n-1 || len(s.Pending) != 1 || string(s.Pending[0].ID) != fmt.Sprint(n) {
		t.Fatalf("%d frames, pending %+v: want %d frames and id %d pending", len(s.Frames), s.Pending, 2*n-1, n)
	}
	var html bytes.Buffer
	start = time.Now()
	if err := s.WriteHTML(&html, "large"); err != nil {
		t.Fatal(err)
	}
	render := time.Since(start)
	t.Logf("%d frames: record %d bytes read in %v, HTML of %d bytes written in %v", 2*n-1, len(rec), read, html.Len(), render)
	out := html.String()
	if html.Len() > 4<<20 {
		t.Errorf("HTML of %d bytes for %d frames: want it folded under 4 MiB", html.Len(), 2*n-1)
	}
	for _, want := range []string{"drawn as columns of counts", "requests drawn as spans", fmt.Sprintf(`data-req="in %d"`, n), `class="block" data-since=`} {
		if !strings.Contains(out, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	var text bytes.Buffer
	s.WriteText(&text)
	if n := strings.Count(text.String(), "\n"); n > 100 {
		t.Errorf("text summary of %d frames has %d lines: want long runs folded", len(s.Frames), n)
	}
}

// TestCompact: a live Session dropping what ended before the window keeps
// the unanswered request, its frame and the ended block inside the window.
func TestCompact(t *testing.T) {
	t.Parallel()
	s, err := Read(bytes.NewReader(synthetic(2000)))
	if err != nil {
		t.Fatal(err)
	}
	s.compact(s.End - 100_000)
	s.Finish()
	if len(s.Pending) != 1 || string(s.Pending[0].ID) != "2000" || s.Frames[s.Pending[0].Frame].Method != "tools/call" {
		t.Fatalf("after compact pending %+v: want id 2000 with its frame", s.Pending)
	}
	if len(s.Frames) > 5000 || len(s.Requests) > 2000 {
		t.Errorf("after compact %d frames, %d requests: want those before the window dropped", len(s.Frames), len(s.Requests))
	}
	// An answer after compaction still finds its request.
	s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T: s.End + 10, T0: s.End + 10, Kind: record.KindResponse, ID: json.RawMessage("2000"), N: 10})
	s.Finish()
	if len(s.Pending) != 1 || s.Pending[0].State != "responding" || s.Pending[0].RespBytes != 10 {
		t.Errorf("pending %+v after the answer was read (no chunk: not delivered): want id 2000 responding, 10 bytes", s.Pending)
	}
}

// TestJSON: the -json form of a Session holds the header without working
// directories, and the spans and marks the report draws.
func TestJSON(t *testing.T) {
	t.Parallel()
	s := readFile(t, sampleRecord)
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Header   map[string]any   `json:"header"`
		Blocks   []Span           `json:"blocks"`
		Marks    []Mark           `json:"marks"`
		Requests []Request        `json:"requests"`
		Pending  []Request        `json:"pending"`
		Verdicts []record.Verdict `json:"verdicts"`
		Metrics  *record.Metrics  `json:"metrics"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Header["cwd"]; ok || got.Header["env_names"] != float64(2) {
		t.Errorf("header %v: want env_names 2 and no cwd", got.Header)
	}
	if len(got.Blocks) != 1 || got.Blocks[0].End != 65374 || len(got.Requests) != 3 || got.Pending == nil || len(got.Verdicts) != 2 || got.Metrics == nil {
		t.Errorf("json: blocks %+v, %d requests, pending %v, %d verdicts, metrics %v", got.Blocks, len(got.Requests), got.Pending, len(got.Verdicts), got.Metrics)
	}
	kinds := map[string]int64{}
	for _, m := range got.Marks {
		kinds[m.Ev] = m.T
	}
	if kinds["cancel"] != 71503 || kinds["late"] != 167024 {
		t.Errorf("marks %v: want cancel at 71503, late at 167024", kinds)
	}
}

// TestHTMLReport: the report of the sample is one file with nothing to
// fetch, a bar for the block with its bytes, markers for the cancel and
// the late answer at their recorded times, a span per request, and the
// frames a click shows, as JSON.
func TestHTMLReport(t *testing.T) {
	t.Parallel()
	s := readFile(t, sampleRecord)
	var b bytes.Buffer
	if err := s.WriteHTML(&b, "sample.ndjson"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	checkSelfContained(t, out)
	for _, want := range []string{
		`<g class="block" data-since="41746" data-end="65374" data-bytes="4096">`,
		`<g class="mark cancel" data-t="71503" data-id="3">`,
		`<g class="mark late" data-t="167024" data-id="3">`,
		`<g class="req delivered" data-req="in 3" data-sent="65052" data-delivered="167037"`,
		`<g class="req delivered" data-req="in 2" data-sent="33697" data-delivered="69880"`,
		"<li data-kind=\"cancel-ignored\">cancel for id 3 (tools/call slow) forwarded",
		"none: every request's response was delivered",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	m := regexp.MustCompile(`<script id="frames" type="application/json">(.*?)</script>`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("report has no frames data")
	}
	var frames []Frame
	if err := json.Unmarshal([]byte(m[1]), &frames); err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]Frame{}
	for _, f := range frames {
		seqs[f.Seq] = f
	}
	if f := seqs[27]; f.Method != "tools/call" || f.Tool != "slow" || !strings.Contains(f.Head, `"name":"slow"`) {
		t.Errorf("frame of request 3 (seq 27) in the data = %+v", f)
	}
	if n := strings.Count(out, `class="frame `); n != 8 {
		t.Errorf("%d frame marks, want the record's 8", n)
	}
}

// checkSelfContained fails t if page refers to anything outside itself.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	for _, bad := range []string{"http://", "https://", "src=", "href=", "url(", "@import", "//cdn"} {
		if strings.Contains(rest, bad) {
			i := strings.Index(rest, bad)
			t.Errorf("page refers outside itself: %q near %q", bad, rest[max(i-60, 0):min(i+60, len(rest))])
		}
	}
}

// TestRedactedStaysRedacted: a frame's head as the proxy redacted it is
// what the pages show; the redaction marker stays, nothing is decoded.
func TestRedactedStaysRedacted(t *testing.T) {
	t.Parallel()
	s := New()
	s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, Argv: []string{"srv"}, EnvKeys: []string{"API_KEY"}}})
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":` + record.Redacted + `}}}`
	s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: 5, T0: 5, N: 200, Kind: record.KindRequest, ID: json.RawMessage("1"), Method: "tools/call", Tool: "login", Head: head, Redacted: 1})
	s.Finish()
	var h bytes.Buffer
	if err := s.WriteHTML(&h, "r"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), `[redacted]`) {
		t.Errorf("report does not show the redaction marker of the head")
	}
}

// TestPendingUnseenAfterLostDetail: a request with no response seen is
// "waiting" only while the record shows no detail lost, after it was sent,
// of the stream its response comes on; else "unseen".
func TestPendingUnseenAfterLostDetail(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		lost []record.Event
		want string
	}{
		{"nothing lost", nil, "waiting"},
		{"a drop on stdout at the request's time", []record.Event{{Ev: record.EvDrop, Dir: record.DirOut, T: 100, Bytes: 1 << 20}}, "unseen"},
		{"a drop on stdout before the request", []record.Event{{Ev: record.EvDrop, Dir: record.DirOut, T: 90, Bytes: 1 << 20}}, "waiting"},
		{"a drop on stdin after it", []record.Event{{Ev: record.EvDrop, Dir: record.DirIn, T: 200, Bytes: 1 << 20}}, "waiting"},
		{"a drop on stdout after it", []record.Event{{Ev: record.EvDrop, Dir: record.DirOut, T: 200, Bytes: 1 << 20}}, "unseen"},
		{"a frame partly seen on stdout after it", []record.Event{{Ev: record.EvFrame, Dir: record.DirOut, T: 300, T0: 150, N: 1 << 20, Gap: true}}, "unseen"},
	} {
		s := New()
		s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: 100, T0: 100, N: 60, Kind: record.KindRequest, ID: json.RawMessage("2"), Method: "tools/call", Tool: "big"})
		for _, e := range c.lost {
			s.Add(e)
		}
		s.Finish()
		if len(s.Pending) != 1 || s.Pending[0].State != c.want {
			t.Errorf("%s: pending %+v, want id 2 %s", c.name, s.Pending, c.want)
		}
	}
}
