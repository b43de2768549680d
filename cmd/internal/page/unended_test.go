package page

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/record"
)

// TestKilledRecord: a record the proxy could not finish (SIGKILL 25 ms
// after SIGTERM, as Codex ends its tools) has no summary; the terminal
// summary and the report still give metrics counted from the events, the
// verdicts' durations up to the record's end (not as the live verdict
// first said them), the response in progress with its bytes, and where
// the record ends and why.
func TestKilledRecord(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file  string
		state ProxyState
		want  []string
	}{
		{"killed-hoststall.ndjson", ProxyGone, []string{
			"end     the record ends at +3.423s (2026-12-04 19:24:44.346 UTC) without the proxy's summary: the proxy (pid 28730) is gone: it was killed (or died) before it could finish the record; its last event is a signal: SIGTERM, passed on to the server;",
			"verdicts (worked out from the events up to +3.423s: the record has no summary)\n",
			"  - host is not reading the server's output for 3.3s at least, still when the record ends (a write of 64 KiB to the host's stdout blocked from +0.159s); at +1.201s the proxy saw: the response to id 2 (tools/call big), 1.1 MiB of it read from the server so far, is waiting for 1s;",
			"metrics (worked out from the events up to +3.423s: the record has no summary)\n  requests 3, responses 1, notifications 0, server requests 0, cancels 1,",
			"stdout 1.1 MiB in 1 frames",
			"blocked writes: server's stdin 0s, host's stdout 3.3s, host's stderr 0s",
			"host → server id 2 (tools/call big): responding, sent at +0.012s, 3.4s before the record ends, response in progress: 1.1 MiB read so far, 1.0 MiB of it delivered, its end not in the record, cancelled at +3.211s\n",
		}},
		{"killed-fault.ndjson", ProxyRunning, []string{
			"the proxy (pid 746) is still running (it holds the record open)",
			"  - the proxy's fault out:stop has held the server's stdout for 6.1s at least, still when the record ends (from +0.153s); at +1.201s the proxy saw: 62 KiB waiting in the server's stdout pipe;",
			"held by faults (not in the blocked writes): fault stop on server → host 6.1s",
			"server → host: a message in progress, 1843 bytes read from +0.150s on (1843 bytes of it delivered); its end is not in the record\n",
		}},
		{"killed-fault.ndjson", ProxyUnknown, []string{"without the proxy's summary: the proxy was killed, or is still running;"}},
	} {
		s := readFile(t, "testdata/"+c.file)
		s.SetProxyState(c.state)
		var text, html bytes.Buffer
		if err := s.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteHTML(&html, c.file); err != nil {
			t.Fatal(err)
		}
		for _, want := range c.want {
			if !strings.Contains(text.String(), want) {
				t.Errorf("%s (%q): the summary lacks %q:\n%s", c.file, c.state, want, text.String())
			}
			// The report says the same words, but for the metrics' layout.
			if w, ok := strings.CutPrefix(want, "end     "); ok || strings.HasPrefix(want, "  - ") {
				if w = esc(strings.TrimPrefix(w, "  - ")); !strings.Contains(html.String(), w) {
					t.Errorf("%s (%q): the report lacks %q", c.file, c.state, w)
				}
			}
		}
		if strings.Contains(text.String(), "metrics none") || s.Metrics == nil || s.Summary {
			t.Errorf("%s: metrics %+v, summary %v: want metrics from the events", c.file, s.Metrics, s.Summary)
		}
	}
}

// TestSummaryWins: a record with a summary shows the summary's verdicts
// and metrics as they are, and says nothing of an unended record.
func TestSummaryWins(t *testing.T) {
	t.Parallel()
	s := readFile(t, sampleRecord)
	s.SetProxyState(ProxyGone)
	if !s.Summary || s.Unended != "" || s.Metrics == nil || s.Metrics.Requests != 3 {
		t.Errorf("summary %v, unended %q, metrics %+v: want the summary's", s.Summary, s.Unended, s.Metrics)
	}
}

// TestUnendedFlood: a record without a summary in which 20,000 requests
// went unanswered names the first few and counts the rest in one verdict,
// however many live verdicts the proxy wrote.
func TestUnendedFlood(t *testing.T) {
	t.Parallel()
	s := New()
	s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, Argv: []string{"srv"}}})
	const n = 20_000
	for i := 1; i <= n; i++ {
		id := []byte(itoa(int64(i)))
		s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: int64(i), T0: int64(i), N: 60, Kind: record.KindRequest, ID: id, Method: "tools/call", Tool: "echo"})
	}
	for i := 1; i <= n; i++ {
		s.Add(record.Event{Ev: record.EvVerdict, T: 10_000_000 + int64(i), Verdict: &record.Verdict{Kind: record.VerdictUnanswered, ID: []byte(itoa(int64(i))), Text: "server has not answered id " + itoa(int64(i)) + " for 10s"}})
	}
	s.Add(record.Event{Ev: record.EvSignal, T: 30_000_000, Signal: "SIGTERM", Text: "passed on to the server"})
	s.Finish()
	if len(s.Verdicts) != maxUnansweredVerdicts+1 {
		t.Fatalf("%d verdicts, want %d named and one that counts the rest: %v", len(s.Verdicts), maxUnansweredVerdicts, s.Verdicts[:min(len(s.Verdicts), 8)])
	}
	if want := "server has not answered id 1 (tools/call echo) for 30s at least, still when the record ends (sent at +0.000s)"; s.Verdicts[0].Text != want {
		t.Errorf("first verdict %q, want %q", s.Verdicts[0].Text, want)
	}
	if last := s.Verdicts[maxUnansweredVerdicts].Text; !strings.Contains(last, "server has not answered 19995 more requests") {
		t.Errorf("last verdict %q, want the rest counted", last)
	}
}

// TestCutRecord: a record whose writing failed ends with a cut event; it
// is not called killed: the page says writing it failed, why, and that
// the proxy went on, unrecorded, and its lost detail is not "none".
func TestCutRecord(t *testing.T) {
	t.Parallel()
	s := New()
	s.Add(record.Event{Ev: record.EvHeader, Header: &record.Header{V: 1, Schema: record.SchemaName, Argv: []string{"srv"}, PID: 42}})
	s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: 100, T0: 100, N: 60, Kind: record.KindRequest, ID: []byte("1"), Method: "ping"})
	s.Add(record.Event{Ev: record.EvCut, T: 2_000_000, Err: "write rec.ndjson: no space left on device", Events: 3})
	s.Finish()
	s.SetProxyState(ProxyGone)
	var text bytes.Buffer
	s.WriteText(&text)
	for _, want := range []string{
		"end     the record ends at +2.000s without the proxy's summary: writing it failed at +2.000s (write rec.ndjson: no space left on device; 3 events lost with that write), and the proxy went on forwarding, unrecorded; the proxy (pid 42) has ended since;",
		"CUT the record ends here, early: writing it failed",
		"lost detail\n  the record ends early: writing it failed (write rec.ndjson: no space left on device), 3 events lost with that write, and nothing after it recorded\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "killed") {
		t.Errorf("summary calls a cut record killed:\n%s", text.String())
	}
}
