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

	"github.com/mcpstdio/mcpstdio/record"
)

// flood returns a record of a server that stops answering while the host
// sends n calls and then cancels each, and the server answers the last
// ten after their cancel: every call unfinished, every cancel and late
// answer a mark. No summary (the proxy still runs). Made once per n.
func flood(n int) []byte {
	if b, ok := floodMade.Load(n); ok {
		return b.([]byte)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	seq := int64(0)
	emit := func(e record.Event) {
		e.Seq = seq
		seq++
		enc.Encode(e)
	}
	emit(record.Event{Ev: record.EvHeader, Header: &record.Header{V: record.SchemaVersion, Schema: record.SchemaName, Argv: []string{"srv"}, Head: 256}})
	var off int64
	for i := 1; i <= n; i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
		t := int64(1000 + i*10)
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: t, T0: t, Off: off, N: int64(len(req)), Kind: record.KindRequest, ID: json.RawMessage(fmt.Sprint(i)), Method: "tools/call", Tool: "echo", Head: req})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirIn, T: t, Off: off, N: int64(len(req) + 1), WT: t + 2})
		off += int64(len(req) + 1)
	}
	t0 := int64(1000 + n*10 + 1000)
	for i := 1; i <= n; i++ {
		emit(record.Event{Ev: record.EvCancel, Dir: record.DirIn, T: t0 + int64(i), ID: json.RawMessage(fmt.Sprint(i)), Method: "tools/call", Tool: "echo", State: "waiting", Reason: "timeout"})
	}
	var out int64
	for i := n - 9; i <= n; i++ {
		t := t0 + int64(n) + 5000
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)
		emit(record.Event{Ev: record.EvLate, Dir: record.DirOut, T: t, ID: json.RawMessage(fmt.Sprint(i)), Method: "tools/call", After: 5000})
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T: t, T0: t, Off: out, N: int64(len(resp)), Kind: record.KindResponse, ID: json.RawMessage(fmt.Sprint(i)), Head: resp})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirOut, T: t, Off: out, N: int64(len(resp) + 1), WT: t + 2})
		out += int64(len(resp) + 1)
	}
	made, _ := floodMade.LoadOrStore(n, b.Bytes())
	return made.([]byte)
}

var floodMade sync.Map // n → flood(n)

// TestFloodBounded: the report, the terminal summary and the live page of
// a record with 20,000 unfinished calls and 20,000 cancels (4,000 under
// the race detector) stay small: the latest few of each per-item list one
// by one and a count, the rest binned or folded, as ordinary frames are.
// Without the bounds the report was 15 MiB and status.json 19 MiB a poll.
func TestFloodBounded(t *testing.T) {
	t.Parallel()
	n := 20_000
	if raceEnabled {
		n = 4_000
	}
	rec := flood(n)
	s, err := Read(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Pending) != n-10 {
		t.Fatalf("%d pending, want %d", len(s.Pending), n-10)
	}
	var html, text bytes.Buffer
	start := time.Now()
	if err := s.WriteHTML(&html, "flood"); err != nil {
		t.Fatal(err)
	}
	s.WriteText(&text)
	t.Logf("%d calls and cancels: report %d bytes, summary %d bytes, in %v", n, html.Len(), text.Len(), time.Since(start))
	out := html.String()
	for _, c := range []struct {
		what string
		n    int
		max  int
	}{
		{"report bytes", html.Len(), 1 << 20},
		{"summary bytes", text.Len(), 100 << 10},
		{"summary lines", strings.Count(text.String(), "\n"), 700},
		{"request spans", strings.Count(out, `<g class="req `), maxSpans},
		{"frame marks", strings.Count(out, `<rect class="frame `), 2 * maxSpans},
		{"cancel marks", strings.Count(out, `<g class="mark cancel"`), maxItemMarks},
		{"pending rows", strings.Count(out, `<tr class="stuck">`), maxPendingListed},
	} {
		if c.n > c.max {
			t.Errorf("%s: %d, want at most %d", c.what, c.n, c.max)
		}
	}
	for _, want := range []string{
		fmt.Sprintf("%d cancels in the window: the latest %d drawn one by one, %d earlier ones as columns of counts", n, maxItemMarks, n-maxItemMarks),
		fmt.Sprintf("… %d more pending requests, sent from", n-10-maxPendingListed),
	} {
		if !strings.Contains(out, esc(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if !strings.Contains(out, `class="bin markbin cancel"`) {
		t.Errorf("report draws no column of cancels")
	}
	if !strings.Contains(text.String(), "lines folded") || !strings.Contains(text.String(), "cancel") {
		t.Errorf("summary does not fold the cancels:\n%.3000s", text.String())
	}

	// The live page: one poll's data.
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(log, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	pending := make([]map[string]any, n)
	for i := range pending {
		pending[i] = map[string]any{"dir": "in", "id": i + 1, "method": "tools/call", "state": "cancelled"}
	}
	srv := &Server{Token: "t", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Start: now.Add(-time.Second), Log: log, Status: map[string]any{"proxy_pid": 7, "pending": pending}}}, nil
	}}
	b, err := json.Marshal(srv.Snapshot(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	var live Live
	json.Unmarshal(b, &live)
	t.Logf("status.json: %d bytes", len(b))
	if len(b) > 1<<20 {
		t.Errorf("status.json of %d bytes, want under 1 MiB", len(b))
	}
	p := live.Proxies[0]
	if len(p.Requests) > maxLiveRequests+10 || p.RequestsMore != n-10-maxLiveRequests || p.More["pending"] != n-maxStatusItems {
		t.Errorf("status.json: %d requests, %d more, %v more of the status: want %d listed and the rest counted", len(p.Requests), p.RequestsMore, p.More, maxLiveRequests)
	}
}

// TestMarkLabelsApart: cancels and late answers at one time share one
// label that counts them, instead of labels drawn over each other.
func TestMarkLabelsApart(t *testing.T) {
	t.Parallel()
	s := New()
	s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, Argv: []string{"srv"}}})
	for i := 1; i <= 3; i++ {
		id := json.RawMessage(fmt.Sprint(i))
		s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: 100, T0: 100, N: 60, Kind: record.KindRequest, ID: id, Method: "tools/call"})
		s.Add(record.Event{Ev: record.EvCancel, Dir: record.DirIn, T: 5_000_000, ID: id, State: "waiting"})
		s.Add(record.Event{Ev: record.EvLate, Dir: record.DirOut, T: 9_000_000, ID: id, After: 4_000_000})
	}
	s.Add(record.Event{Ev: record.EvCancel, Dir: record.DirIn, T: 9_900_000, ID: json.RawMessage("9"), State: "unknown"})
	s.Finish()
	v := s.timeline(0, 10_000_000, 0)
	labels := regexp.MustCompile(`<text class="marklabel (cancel|late)"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(v.SVG, -1)
	var got []string
	for _, l := range labels {
		got = append(got, l[1]+": "+l[2])
	}
	want := "cancel: cancel 1 +2, cancel: cancel 9, late: late answer 1 +2"
	if strings.Join(got, ", ") != want {
		t.Errorf("labels %q, want %q", strings.Join(got, ", "), want)
	}
}

// TestLiveStaleLetsGo: a stale proxy's record (it no longer grows) is
// read once: the page keeps what it showed and lets the Session go, and
// shows the same on the next poll; once the record grows (the proxy was
// only stopped) it is read again, from its start.
func TestLiveStaleLetsGo(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	rec := flood(2000)
	if err := os.WriteFile(log, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Token: "t", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Stale: true, Start: now.Add(-time.Hour), Log: log, Status: map[string]any{"proxy_pid": 7}}}, nil
	}}
	first := srv.Snapshot(time.Now()).Proxies[0]
	if tl := srv.tails[log]; tl == nil || tl.card == nil || len(tl.sess.Frames) != 0 || tl.off != 0 {
		t.Fatalf("after the first snapshot of a stale proxy: tail %+v; want its card kept and its Session let go", tl)
	}
	second := srv.Snapshot(time.Now()).Proxies[0]
	if second.Timeline != first.Timeline || second.Ending != first.Ending || !strings.Contains(first.Ending, "without the proxy's summary: the proxy was killed, or is still running") || len(second.Requests) != len(first.Requests) {
		t.Errorf("second snapshot differs from the first, or says no end: ending %q", first.Ending)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	json.NewEncoder(f).Encode(record.Event{Seq: 1 << 30, T: 99_000_000, Ev: record.EvSignal, Signal: "SIGTERM", Text: "passed on to the server"})
	f.Close()
	third := srv.Snapshot(time.Now()).Proxies[0]
	if !strings.Contains(third.Ending, "the record ends at +99.000s") {
		t.Errorf("after the record grew: ending %q, want it read again to its new end", third.Ending)
	}
}

// TestSummaryVerdictsCapped: a summary with a verdict per unanswered
// request of a flood (the proxy writes one each) lists five of a kind and
// counts the rest, in the terminal and the report.
func TestSummaryVerdictsCapped(t *testing.T) {
	t.Parallel()
	s := New()
	s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, Argv: []string{"srv"}}})
	var vs []record.Verdict
	for i := range 20_000 {
		vs = append(vs, record.Verdict{Kind: record.VerdictUnanswered, ID: json.RawMessage(fmt.Sprint(i)), Text: fmt.Sprintf("server has not answered id %d", i)})
	}
	vs = append(vs, record.Verdict{Kind: record.VerdictHostNotReading, Text: "host is not reading"})
	s.Add(record.Event{Ev: record.EvSummary, T: 1, Verdicts: vs, Metrics: &record.Metrics{}})
	s.Finish()
	var text, html bytes.Buffer
	s.WriteText(&text)
	s.WriteHTML(&html, "r")
	if n := strings.Count(text.String(), "  - server has not answered"); n != maxVerdictsOfAKind || !strings.Contains(text.String(), "  - host is not reading\n") ||
		!strings.Contains(text.String(), "… and more verdicts, not listed: 19995 unanswered") {
		t.Errorf("summary lists %d unanswered verdicts, want %d and the rest counted:\n%.2000s", n, maxVerdictsOfAKind, text.String())
	}
	if n := strings.Count(html.String(), `<li data-kind="unanswered">`); n != maxVerdictsOfAKind {
		t.Errorf("report lists %d unanswered verdicts, want %d", n, maxVerdictsOfAKind)
	}
}
