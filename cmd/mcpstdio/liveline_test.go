package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// screen is what a terminal shows after text: a carriage return goes back
// to the start of the line, and what follows overwrites it; trailing spaces
// are not seen. (ASCII only, as the lines these tests draw.)
func screen(text string) []string {
	var lines []string
	for _, raw := range strings.Split(text, "\n") {
		var line []byte
		col := 0
		for i := 0; i < len(raw); i++ {
			if raw[i] == '\r' {
				col = 0
				continue
			}
			if col < len(line) {
				line[col] = raw[i]
			} else {
				line = append(line, raw[i])
			}
			col++
		}
		lines = append(lines, strings.TrimRight(string(line), " "))
	}
	return lines
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newFakeClock() *fakeClock           { return &fakeClock{t: time.Unix(1e9, 0)} }

func TestStatusText(t *testing.T) {
	tests := []struct {
		label   string
		elapsed time.Duration
		width   int
		want    string
	}{
		{"reads-while-blocked", 0, 80, "  ...   reads-while-blocked              0.0s"},
		{"reads-while-blocked", 12345 * time.Millisecond, 80, "  ...   reads-while-blocked             12.3s"},
		{"era", 1500 * time.Millisecond, 80, "  ...   era                              1.5s"},
		{"reads-while-blocked", time.Second, 20, "  ...   reads-while"}, // cut to width-1: never wraps
		{"era", time.Second, 1, ""},
	}
	for _, tt := range tests {
		if got := statusText(tt.label, tt.elapsed, tt.width); got != tt.want {
			t.Errorf("statusText(%q, %v, %d) = %q, want %q", tt.label, tt.elapsed, tt.width, got, tt.want)
		}
	}
	// The status has the columns of a result line: the result overwrites it
	// in place.
	line := assertions.Result{Name: "reads-while-blocked", Verdict: assertions.Pass, Duration: time.Second}.Line()
	status := statusText("reads-while-blocked", time.Second, 80)
	if strings.Index(line, "reads-while-blocked") != strings.Index(status, "reads-while-blocked") {
		t.Errorf("status %q and result line %q do not share their columns", status, line)
	}
}

// TestLiveStatus checks the terminal path's drawing: the line is redrawn in
// place with the elapsed time, erased without a trace, and never ends a
// line of its own.
func TestLiveStatus(t *testing.T) {
	clock := newFakeClock()
	var buf bytes.Buffer
	l := newLiveStatus(&buf, 80, clock.now)

	l.show("cancel-after-output-began")
	clock.add(1200 * time.Millisecond)
	l.redraw()
	if diff := cmp.Diff([]string{statusText("cancel-after-output-began", 1200*time.Millisecond, 80)}, screen(buf.String())); diff != "" {
		t.Errorf("screen after a redraw mismatch (-want +got):\n%s", diff)
	}
	// A shorter label drawn over a longer one leaves nothing of it.
	l.show("era")
	if diff := cmp.Diff([]string{statusText("era", 0, 80)}, screen(buf.String())); diff != "" {
		t.Errorf("screen after a shorter label mismatch (-want +got):\n%s", diff)
	}
	l.pause()
	l.redraw() // paused: draws nothing
	buf.WriteString("  PASS  era  1ms  fine\n")
	l.show("result-bounded")
	l.close()
	l.close() // twice is safe
	l.redraw()
	if diff := cmp.Diff([]string{"  PASS  era  1ms  fine", ""}, screen(buf.String())); diff != "" {
		t.Errorf("final screen mismatch (-want +got):\n%s\nwritten: %q", diff, buf.String())
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 {
		t.Errorf("%d newlines written, want only the result line's: %q", n, buf.String())
	}

	// A narrow terminal: no drawn line reaches the last column.
	buf.Reset()
	l = newLiveStatus(&buf, 24, clock.now)
	l.show("cancel-after-output-began")
	l.redraw()
	for _, seg := range strings.Split(buf.String(), "\r") {
		if len(seg) > 23 {
			t.Errorf("drew %q (%d columns) on a 24-column terminal", seg, len(seg))
		}
	}

	// A nil live status (not a terminal) does nothing.
	var none *liveStatus
	none.show("era")
	none.redraw()
	none.pause()
	none.close()
}

// signalWriter is a writer that tells each write on a channel.
type signalWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.writes <- struct{}{}:
	default:
	}
	return w.buf.Write(p)
}

// TestLiveStatusRedraws checks that the redraw loop redraws the line by
// itself, and ends on close (goleak checks it at the end of the tests).
func TestLiveStatusRedraws(t *testing.T) {
	w := &signalWriter{writes: make(chan struct{}, 1)}
	l := startLiveStatus(w, 80, time.Millisecond)
	defer l.close()
	l.show("era")
	<-w.writes // show's own draw
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	select {
	case <-w.writes: // a redraw from the loop
	case <-ctx.Done():
		t.Fatal("the live status was not redrawn within 30s")
	}
	l.close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if got := screen(w.buf.String()); len(got) != 1 || got[0] != "" {
		t.Errorf("screen after close = %q, want one empty line", got)
	}
}

// TestPrinterLive prints a report as probe does on a terminal, the live
// status and the results on the same screen: what remains is exactly the
// plain lines, and the status was shown for each criterion before its
// result.
func TestPrinterLive(t *testing.T) {
	clock := newFakeClock()
	var live, plain bytes.Buffer
	cfg := assertions.ServerConfig{Run: regexp.MustCompile(`^(stdout-clean|era)$`)}
	results := []assertions.Result{
		{Name: "stdout-clean", Verdict: assertions.Pass, Evidence: "clean", Duration: time.Second},
		{Name: "era", Verdict: assertions.Fail, Evidence: "no", Duration: 2 * time.Second},
	}
	for _, tt := range []struct {
		w    *bytes.Buffer
		live bool
	}{{&live, true}, {&plain, false}} {
		p := &printer{w: tt.w, ctx: t.Context()}
		if tt.live {
			p.live = newLiveStatus(tt.w, 80, clock.now)
		}
		p.begin("./server --stdio", assertions.ServerCriterionNames(), cfg.Run)
		if tt.live && !strings.HasSuffix(tt.w.String(), statusText("(starting the server)", 0, 80)) {
			t.Errorf("no status while the server starts: %q", tt.w.String())
		}
		p.result(assertions.Result{Name: resultStart, Verdict: assertions.Pass, Evidence: "started"})
		for _, res := range results {
			clock.add(time.Second)
			p.live.redraw()
			if tt.live && !strings.HasSuffix(tt.w.String(), statusText(res.Name, time.Second, 80)) {
				t.Errorf("before the result of %s, the screen ends %q, want its status", res.Name, tt.w.String())
			}
			p.result(res)
		}
		p.summary(&assertions.Report{Results: results, Duration: 3 * time.Second})
		p.close()
	}
	if strings.Contains(plain.String(), "\r") {
		t.Errorf("plain output holds a carriage return: %q", plain.String())
	}
	if diff := cmp.Diff(strings.Split(plain.String(), "\n"), screen(live.String())); diff != "" {
		t.Errorf("terminal screen differs from the plain lines (-plain +screen):\n%s", diff)
	}
}

func TestShellQuote(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{"./server", "--stdio", "-addr=:80", "a,b@c%d+e"}, "./server --stdio -addr=:80 a,b@c%d+e"},
		{[]string{"node", "my server.js", ""}, "node 'my server.js' ''"},
		{[]string{"sh", "-c", "echo 'hi' $HOME"}, `sh -c 'echo '\''hi'\'' $HOME'`},
		{[]string{"grüß"}, "'grüß'"},
	}
	for _, tt := range tests {
		if got := shellQuote(tt.argv); got != tt.want {
			t.Errorf("shellQuote(%q) = %s, want %s", tt.argv, got, tt.want)
		}
	}
}
