package page

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// within runs f and fails t, naming what, if it has not returned within
// d: a hang becomes a named failure instead of the binary's timeout (the
// goroutine is left behind then; the test has failed anyway).
func within(t *testing.T, what string, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestUnknownCancelsLinear: 50,000 answered pings each followed by a
// cancel and a late answer of an id never sent (what a hostile server or
// host can send through the proxy) are taken in time linear in the
// events. Each cancel of an unknown id used to scan every request (8,000
// pairs took 9.7 s in show): 50,000 would take minutes; linear, about a
// second. The bound is an upper bound that only a quadratic model can
// reach, checked as the events are added. Under the race detector, which
// makes both models several times slower, 20,000 (a quadratic model's
// minute without it; CI runs the 50,000 without it, .ci/run).
func TestUnknownCancelsLinear(t *testing.T) {
	t.Parallel()
	n := 50_000
	if raceEnabled {
		n = 20_000
	}
	s := New()
	start := time.Now()
	limit := 60 * time.Second // quadratic, minutes; linear, about a second (four for 20,000 under -race)
	for i := range n {
		id := json.RawMessage(fmt.Sprint(i))
		unknown := json.RawMessage(fmt.Sprintf(`"unknown-%d"`, i))
		tm := int64(i) * 10
		s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T0: tm, T: tm, Kind: record.KindRequest, ID: id, Method: "ping"})
		s.Add(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T0: tm + 1, T: tm + 1, Kind: record.KindResponse, ID: id})
		s.Add(record.Event{Ev: record.EvCancel, Dir: record.DirIn, T: tm + 2, ID: unknown, State: "unknown"})
		s.Add(record.Event{Ev: record.EvLate, Dir: record.DirOut, T: tm + 3, ID: unknown, After: 1})
		if i%1000 == 999 && time.Since(start) > limit {
			t.Fatalf("%d pings and unknown cancels took over %v: the model is not linear in them", i+1, limit)
		}
	}
	s.Finish()
	t.Logf("%d pings, unknown cancels and late answers: %v", n, time.Since(start))
	if len(s.Requests) != n {
		t.Fatalf("%d requests, want %d", len(s.Requests), n)
	}
	for _, r := range s.Requests {
		if r.Response < 0 || r.Cancel != 0 || r.LateUS != 0 {
			t.Fatalf("request %s has no response, or took a cancel or late answer of an id never sent: %+v", r.ID, r)
		}
	}
	// A cancel of a known id still finds its request, answered or not.
	s.Add(record.Event{Ev: record.EvCancel, Dir: record.DirIn, T: 1, ID: json.RawMessage("7"), State: "answered"})
	if r := s.Requests[7]; r.Cancel != 1 || r.CancelAt != "answered" {
		t.Errorf("the cancel of id 7 was not kept on its request: %+v", r)
	}
}

// hugeRecord is a two-line record whose times are near MaxInt64 (and one
// negative): the case that made show -html loop forever.
func hugeRecord() []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(record.Event{Ev: record.EvHeader, Header: &record.Header{V: record.SchemaVersion, Schema: record.SchemaName, Argv: []string{"srv"}}})
	enc.Encode(record.Event{Seq: 1, Ev: record.EvFrame, Dir: record.DirIn, T0: 1, T: math.MaxInt64 - 5, Kind: record.KindRequest, ID: json.RawMessage("1"), Method: "ping"})
	enc.Encode(record.Event{Seq: 2, Ev: record.EvUnblock, Dir: record.DirOut, T: math.MaxInt64, Since: -5, Dur: math.MaxInt64})
	return b.Bytes()
}

// TestAbsurdTimes: a record with times near MaxInt64 is drawn, as text,
// as HTML and on the live page's timeline, within a bound, with a note
// that its times were clamped; the axis of any window, however near the
// ends of int64, has at most ten ticks.
func TestAbsurdTimes(t *testing.T) {
	t.Parallel()
	s, err := Read(bytes.NewReader(hugeRecord()))
	if err != nil {
		t.Fatal(err)
	}
	if s.Clamped == 0 || s.End != MaxTime {
		t.Errorf("clamped %d times, end %d; want some clamped, end %d", s.Clamped, s.End, MaxTime)
	}
	var text, html bytes.Buffer
	within(t, "WriteHTML of a record with times near MaxInt64", 20*time.Second, func() { err = s.WriteHTML(&html, "huge") })
	if err != nil {
		t.Fatal(err)
	}
	within(t, "WriteText", 20*time.Second, func() { err = s.WriteText(&text) })
	for name, out := range map[string]string{"text": text.String(), "html": html.String()} {
		if !strings.Contains(out, "times in the record were outside 0 to 100 years") {
			t.Errorf("the %s does not say times were clamped:\n%.2000s", name, out)
		}
	}
	for _, w := range [][2]int64{{math.MaxInt64 - 1000, math.MaxInt64}, {0, math.MaxInt64}, {math.MinInt64, math.MaxInt64}, {math.MinInt64, math.MinInt64 + 7}, {math.MaxInt64 - 1, math.MaxInt64}} {
		var v view
		sw := &svgWriter{from: w[0], to: w[1], v: &v}
		within(t, fmt.Sprintf("the axis of [%d, %d]", w[0], w[1]), 10*time.Second, func() { sw.axis(100) })
		if n := strings.Count(sw.b.String(), `class="tick"`); n > 10 {
			t.Errorf("the axis of [%d, %d] has %d ticks, want at most 10", w[0], w[1], n)
		}
	}
	within(t, "the live timeline near MaxInt64", 10*time.Second, func() { s.timeline(MaxTime-1000, MaxTime, MaxTime) })
}

// TestHostileText: the terminal summary of a record with payloads (escape
// sequences, newlines, C1 controls, bidi overrides) in every string field
// holds no raw control character but the newlines that end its lines, and
// no line of it begins with a forged verdict.
func TestHostileText(t *testing.T) {
	t.Parallel()
	s := readHostile(t)
	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(b.String(), "\n") {
		for _, r := range l {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == '\u202e' {
				t.Errorf("line %d holds the control character %U: %q", i+1, r, l)
				break
			}
		}
		if strings.HasPrefix(l, "PASS") {
			t.Errorf("line %d is a forged verdict: %q", i+1, l)
		}
	}
	if !strings.Contains(b.String(), `\x1b]0;forged title\x07\x1b[2J\x1b[1A\rPASS all\x9b2J\u202e`) {
		t.Errorf("the summary does not show the escape sequences escaped:\n%s", b.String())
	}
}
