package page

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// payloads are what a hostile server, host or record writer puts in every
// string field: markup, event handlers, attribute breakouts (the
// content-visibility one runs with no click) and terminal escapes.
var payloads = []string{
	`<script>document.title="pwned"</script>`,
	`<img src=x onerror="document.title='pwned'">`,
	`x" autofocus onfocus="document.title='pwned'" y="`,
	`x' onmouseover='document.title=1' y='`,
	`x" style="content-visibility:auto" oncontentvisibilityautostatechange="document.title='pwned'" y="`,
	"\x1b]0;forged title\a\x1b[2J\x1b[1A\rPASS all\u009b2J\u202e",
}

// rawPayload matches what only an unescaped payload leaves in HTML.
var rawPayload = regexp.MustCompile(`<script>document|<img |x" |x' `)

// hostileRecord is a record with a payload in every string field the page
// model keeps.
func hostileRecord() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	p := func(i int) string { return payloads[i%len(payloads)] }
	id := func(i int) json.RawMessage { j, _ := json.Marshal(p(i)); return j }
	seq := int64(0)
	emit := func(e record.Event) { e.Seq = seq; seq++; enc.Encode(e) }
	emit(record.Event{Ev: record.EvHeader, Header: &record.Header{V: record.SchemaVersion, Schema: record.SchemaName, Proxy: p(0), OS: p(1), Arch: p(2),
		Argv: payloads, EnvKeys: payloads, Redact: payloads, Keys: payloads, Faults: []record.Fault{{Dir: p(3), Kind: p(4), Note: p(5)}}}})
	for i := range len(payloads) * 3 {
		t := int64(1000 * (i + 1))
		dir := []string{record.DirIn, record.DirOut, p(i / 3)}[i%3]
		emit(record.Event{Ev: record.EvFrame, Dir: dir, T0: t, T: t + 10, N: 50, Kind: record.KindRequest, ID: id(i), Method: p(i + 1), Tool: p(i + 2), Head: p(i + 3), Hash: p(i + 4), Token: id(i)})
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T0: t + 20, T: t + 30, N: 50, Kind: p(i), ID: id(i + 1), Method: p(i), Head: p(i + 5)})
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T0: t + 25, T: t + 30, N: 50, Kind: record.KindNotification, Method: "notifications/progress", Token: id(i), Head: p(i)})
		emit(record.Event{Ev: record.EvChunk, Dir: dir, T: t, Off: 0, N: 10, WT: t + 1})
		emit(record.Event{Ev: record.EvCancel, Dir: dir, T: t + 40, ID: id(i), Method: p(i + 1), Tool: p(i + 2), State: p(i + 3), Reason: p(i + 4)})
		emit(record.Event{Ev: record.EvLate, Dir: other(dir), T: t + 50, ID: id(i), Method: p(i + 1), Tool: p(i + 2), After: 10})
		emit(record.Event{Ev: record.EvBlock, Dir: p(i), T: t + 60, Since: t + 60, N: 10, Text: p(i + 1)})
		emit(record.Event{Ev: record.EvUnblock, Dir: p(i), T: t + 70, Since: t + 60, Dur: 10})
		emit(record.Event{Ev: record.EvFault, Dir: p(i), T: t + 80, Text: "stopped " + p(i), Err: p(i + 1), Fault: &record.Fault{Dir: p(i), Kind: "stop"}})
		emit(record.Event{Ev: record.EvFault, Dir: p(i), T: t + 90, Text: p(i + 2), Fault: &record.Fault{Dir: p(i), Kind: p(i + 3)}})
		emit(record.Event{Ev: record.EvDrop, Dir: p(i), T: t + 95, Text: p(i), Bytes: 3, Events: 1})
		emit(record.Event{Ev: record.EvVerdict, T: t + 96, Verdict: &record.Verdict{Kind: p(i), ID: id(i), Text: p(i + 1)}})
		emit(record.Event{Ev: []string{record.EvEOF, record.EvClose, record.EvSignal, record.EvError}[i%4], Dir: p(i), T: t + 97, Text: p(i), Signal: p(i + 1), Err: p(i + 2)})
	}
	emit(record.Event{Ev: record.EvExit, T: 100_000, Status: payloads[5] + payloads[0]})
	emit(record.Event{Ev: record.EvSummary, T: 100_001, Verdicts: []record.Verdict{{Kind: p(4), ID: id(4), Text: p(5)}, {Kind: p(2), Text: p(3)}}, Metrics: &record.Metrics{Requests: 1}})
	return b.Bytes()
}

func readHostile(t *testing.T) *Session {
	t.Helper()
	s, err := Read(bytes.NewReader(hostileRecord()))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestHostileHTML: the report of a record with payloads in every string
// field holds none of them unescaped (text, attributes, the pending
// table's direction, the SVG titles), and its CSP lets only its own style
// and script apply, by hash, with no 'unsafe-inline'.
func TestHostileHTML(t *testing.T) {
	t.Parallel()
	s := readHostile(t)
	var b bytes.Buffer
	if err := s.WriteHTML(&b, payloads[2]); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// The frames are JSON in a data block, the raw text of a <script>
	// element: there only "</script" could end it, and encoding/json
	// escapes every <.
	data := regexp.MustCompile(`(?s)<script id="frames" type="application/json">(.*?)</script>`).FindStringSubmatchIndex(out)
	if data == nil || strings.Contains(out[data[2]:data[3]], "<") || !json.Valid([]byte(out[data[2]:data[3]])) {
		t.Fatal("the report has no frames data block, or one with a < or not JSON")
	}
	html := out[:data[2]] + out[data[3]:]
	if m := rawPayload.FindAllStringIndex(html, 3); m != nil {
		for _, at := range m {
			t.Errorf("the report holds a payload unescaped: …%s…", html[max(at[0]-80, 0):min(at[1]+80, len(html))])
		}
	}
	if n := strings.Count(out, "<script"); n != 2 {
		t.Errorf("the report has %d <script elements, want 2 (the frames as JSON and its own script)", n)
	}
	if regexp.MustCompile(`\sstyle=["']`).MatchString(out) {
		t.Error("the report has a style attribute, which its CSP would refuse")
	}
	csp := regexp.MustCompile(`<meta http-equiv="Content-Security-Policy" content="([^"]*)">`).FindStringSubmatch(out)
	if csp == nil {
		t.Fatal("the report has no CSP")
	}
	policy := strings.ReplaceAll(csp[1], "&#39;", "'")
	checkCSP(t, "the report", policy, "<style>"+pageCSS+"</style>", "<script>"+reportJS+"</script>", out)
}

// checkCSP checks that policy allows no inline code but the page's own
// style and script, named by their hashes, and that page holds them.
func checkCSP(t *testing.T, what, policy, style, script, page string) {
	t.Helper()
	if strings.Contains(policy, "unsafe-inline") || strings.Contains(policy, "unsafe-eval") || !strings.Contains(policy, "default-src 'none'") {
		t.Errorf("%s's CSP is %q: want default-src 'none' and no unsafe-inline or unsafe-eval", what, policy)
	}
	for _, want := range []string{"style-src " + hashSource(pageCSS), "script-src " + hashSource(strings.TrimSuffix(strings.TrimPrefix(script, "<script>"), "</script>"))} {
		if !strings.Contains(policy, want) {
			t.Errorf("%s's CSP %q lacks %q", what, policy, want)
		}
	}
	if !strings.Contains(page, style) || !strings.Contains(page, script) {
		t.Errorf("%s does not hold its style and script exactly as hashed", what)
	}
}

// TestHostileLive: the live page's CSP allows only its own style and
// script, by hash; status.json for a record with payloads in every field
// is JSON (escaped by encoding/json) whose timeline, the one piece of HTML
// in it, holds no payload unescaped.
func TestHostileLive(t *testing.T) {
	t.Parallel()
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(log, hostileRecord(), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Token: "s3cret", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Start: time.Time{}, Log: log, Status: map[string]any{"proxy_pid": payloads[4]}}}, nil
	}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/?token=s3cret")
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	page.ReadFrom(resp.Body)
	resp.Body.Close()
	checkCSP(t, "the live page", resp.Header.Get("Content-Security-Policy"), "<style>"+pageCSS+"</style>", "<script>"+liveJS+"</script>", page.String())
	live := srv.Snapshot(time.Now())
	if len(live.Proxies) != 1 || live.Proxies[0].Timeline == "" {
		t.Fatalf("snapshot %+v: want one proxy with a timeline", live)
	}
	tl := live.Proxies[0].Timeline
	if m := rawPayload.FindStringIndex(tl); m != nil {
		t.Errorf("the live timeline holds a payload unescaped: …%s…", tl[max(m[0]-80, 0):min(m[1]+80, len(tl))])
	}
}

var update = flag.Bool("update", false, "rewrite testdata/hostile.ndjson")

// TestHostileRecordFile: testdata/hostile.ndjson, which the command's and
// the browser tests read, is hostileRecord (go test -update rewrites it).
func TestHostileRecordFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "hostile.ndjson")
	if *update {
		if err := os.WriteFile(path, hostileRecord(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, hostileRecord()) {
		t.Errorf("%s is not hostileRecord (%v): run go test -run TestHostileRecordFile -update", path, err)
	}
}
