package page

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// liveServer serves a Server whose one proxy's record is a copy of the
// sample up to its unblock event (its last line cut short), growing as
// the test appends the rest.
func liveServer(t *testing.T) (*httptest.Server, string, []byte) {
	t.Helper()
	sample, err := os.ReadFile(sampleRecord)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	half := bytes.Index(sample, []byte(`{"seq":29,`))                  // before the unblock
	if err := os.WriteFile(log, sample[:half-10], 0o600); err != nil { // a partial last line
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Second)
	srv := &Server{Token: "s3cret", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Start: start, Log: log, Status: map[string]any{"proxy_pid": 1, "pending": []any{}}}}, nil
	}}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts, log, sample[half-10:]
}

func get(t *testing.T, url, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestLiveRefuses: without the token, with a wrong one, or under a host
// name that is not loopback (DNS rebinding), nothing is served; a write
// method is refused.
func TestLiveRefuses(t *testing.T) {
	t.Parallel()
	ts, _, _ := liveServer(t)
	for _, c := range []struct{ name, url, host string }{
		{"no token", ts.URL + "/", ""},
		{"no token, data", ts.URL + "/status.json", ""},
		{"wrong token", ts.URL + "/status.json?token=s3creT", ""},
		{"empty token", ts.URL + "/?token=", ""},
		{"other host", ts.URL + "/?token=s3cret", "evil.example:80"},
	} {
		code, body := get(t, c.url, c.host)
		if code != http.StatusForbidden || strings.Contains(body, "proxy_pid") || strings.Contains(body, "<svg") {
			t.Errorf("%s: %d %q, want 403 and nothing of the page", c.name, code, body)
		}
	}
	resp, err := http.Post(ts.URL+"/status.json?token=s3cret", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", resp.StatusCode)
	}
}

// TestLiveFollowsRecord: the page is served with its token; status.json
// shows the record as it grows: first the request pending and the block
// open, then, once the rest is written, the block ended with its duration
// and the request delivered.
func TestLiveFollowsRecord(t *testing.T) {
	t.Parallel()
	ts, log, rest := liveServer(t)
	code, body := get(t, ts.URL+"/?token=s3cret", "")
	if code != 200 || !strings.Contains(body, "status.json?token=") {
		t.Fatalf("page: %d %.200q", code, body)
	}
	checkSelfContained(t, body)
	live := func() LiveProxy {
		t.Helper()
		code, body := get(t, ts.URL+"/status.json?token=s3cret", "")
		var l Live
		if err := json.Unmarshal([]byte(body), &l); code != 200 || err != nil || len(l.Proxies) != 1 {
			t.Fatalf("status.json: %d %v %.300q", code, err, body)
		}
		return l.Proxies[0]
	}
	p := live()
	if !strings.Contains(p.Timeline, "<svg") || len(p.Blocks) != 1 || p.Blocks[0].End != 0 {
		t.Fatalf("first half: blocks %+v, timeline %.100q: want the block open", p.Blocks, p.Timeline)
	}
	states := map[string]string{}
	for _, r := range p.Requests {
		states[string(r.ID)] = r.State
	}
	if states["2"] == "delivered" {
		t.Errorf("first half: requests %v: want id 2 not delivered yet", states)
	}
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(rest)
	f.Close()
	p = live()
	if len(p.Blocks) != 1 || p.Blocks[0].End != 65374 {
		t.Errorf("whole record: blocks %+v, want the block ended at 65374", p.Blocks)
	}
	for _, r := range p.Requests {
		if r.State != "delivered" {
			t.Errorf("whole record: request %s %s, want delivered", r.ID, r.State)
		}
	}
	if !strings.Contains(p.Record, "rec.ndjson") || strings.Contains(p.Record, "reading it") {
		t.Errorf("record state %q", p.Record)
	}
}

func TestCheckLoopback(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr, want string
		ok         bool
	}{
		{"127.0.0.1:0", "127.0.0.1:0", true},
		{"127.0.0.2:8080", "127.0.0.2:8080", true},
		{"[::1]:0", "[::1]:0", true},
		{"localhost:9", "127.0.0.1:9", true},
		{":0", "", false},
		{"0.0.0.0:0", "", false},
		{"[::]:0", "", false},
		{"192.0.2.1:80", "", false},
		{"example.com:80", "", false},
		{"127.0.0.1", "", false},
	} {
		got, err := CheckLoopback(c.addr)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("CheckLoopback(%q) = %q, %v; want %q, ok %v", c.addr, got, err, c.want, c.ok)
		}
	}
}

// TestLiveLarge: the live page of a proxy whose record holds 100,000
// frames (10,000 under the race detector, which is 10 times slower): the
// first snapshot reads the whole record, the next ones only what was
// added, each within the page's update interval.
func TestLiveLarge(t *testing.T) {
	t.Parallel()
	n := 50_000
	if raceEnabled {
		n = 5_000
	}
	log := filepath.Join(t.TempDir(), "rec.ndjson")
	if err := os.WriteFile(log, synthetic(n), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &Server{Token: "t", List: func(now time.Time) ([]Proxy, error) {
		return []Proxy{{Path: log + ".status.json", Start: now.Add(-2 * time.Second), Log: log, Status: map[string]any{}}}, nil
	}}
	start := time.Now()
	first := srv.Snapshot(time.Now())
	firstTook := time.Since(start)
	start = time.Now()
	next := srv.Snapshot(time.Now())
	nextTook := time.Since(start)
	t.Logf("%d frames: first snapshot %v (reads the record), next %v", 2*n-1, firstTook, nextTook)
	if len(first.Proxies) != 1 || !strings.Contains(next.Proxies[0].Timeline, "columns of counts") && len(next.Proxies[0].Folded) == 0 {
		t.Fatalf("snapshot: %+v", next.Proxies)
	}
	if len(next.Proxies[0].Requests) == 0 || next.Proxies[0].Requests[0].State == "delivered" {
		t.Errorf("latest requests %+v: want the unanswered one first", next.Proxies[0].Requests[:1])
	}
	// The next snapshot read nothing again: what it took is drawing. The
	// time is logged above (performance is measured, not asserted); a
	// bound of ten update intervals catches a snapshot that reads the
	// record anew, which takes seconds.
	if tl := srv.tails[log]; tl == nil || tl.off != int64(len(synthetic(n))) {
		t.Errorf("after the snapshots the tail is at %v, want the record's end %d", tl, len(synthetic(n)))
	}
	if nextTook > 5*time.Second {
		t.Errorf("a snapshot of a %d-frame record took %v, want it to read only what was added", 2*n-1, nextTook)
	}
}
