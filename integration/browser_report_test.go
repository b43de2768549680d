package integration_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/record"
)

// sampleRecord (the page package's copy of the pinned sample) has a
// blocked write (the host stalled), a cancel and a late answer.
var sampleRecord = filepath.Join("..", "cmd", "internal", "page", "testdata", "sample.ndjson")

// marks is where the report drew the block, the cancel and the late
// answer, in SVG units, and where their recorded times fall on its axis.
type marks struct {
	Block       struct{ X, W, WantX, WantW, Since, End, Bytes float64 }
	Cancel      struct{ X, WantX, T float64 }
	Late        struct{ X, WantX, T float64 }
	BlockLabel  string
	Frames      int
	ReportReady bool
}

const marksJS = `(() => {
  const svg = document.querySelector("svg.timeline");
  const from = +svg.dataset.from, to = +svg.dataset.to;
  const x = t => 120 + (t - from) * (1200 - 120 - 10) / (to - from);
  const center = g => { const b = g.getBBox(); return b.x + b.width / 2; };
  const blk = svg.querySelector("g.block"), r = blk.querySelector("rect").getBBox();
  const since = +blk.dataset.since, end = +blk.dataset.end;
  const c = svg.querySelector("g.mark.cancel"), l = svg.querySelector("g.mark.late");
  return {
    Block: {X: r.x, W: r.width, WantX: x(since), WantW: x(end) - x(since), Since: since, End: end, Bytes: +blk.dataset.bytes},
    Cancel: {X: center(c), WantX: x(+c.dataset.t), T: +c.dataset.t},
    Late: {X: center(l), WantX: x(+l.dataset.t), T: +l.dataset.t},
    BlockLabel: blk.textContent,
    Frames: svg.querySelectorAll("rect.frame").length,
    ReportReady: document.body.dataset.ready === "1",
  };
})()`

// TestReportInBrowser: the HTML report of a record with a stall, a cancel
// and a late answer, opened from a file with nothing else reachable: the
// timeline holds a bar for the blocked write with its bytes, and markers
// for the cancel and the late answer, each at the time the record gives;
// clicking the request shows its frame.
func TestReportInBrowser(t *testing.T) {
	ctx := browser(t)
	var block, unblock, cancel, late record.Event
	f, err := os.Open(sampleRecord)
	if err != nil {
		t.Fatal(err)
	}
	err = record.Read(f, func(e record.Event) error {
		switch e.Ev {
		case record.EvBlock:
			block = e
		case record.EvUnblock:
			unblock = e
		case record.EvCancel:
			cancel = e
		case record.EvLate:
			late = e
		}
		return nil
	})
	f.Close()
	if err != nil || block.Ev == "" || unblock.Ev == "" || cancel.Ev == "" || late.Ev == "" {
		t.Fatalf("the sample lacks a block, an unblock, a cancel or a late answer (%v)", err)
	}
	html := filepath.Join(t.TempDir(), "report.html")
	if _, stderr, code := run(t, "show", "-html", html, sampleRecord); code != 0 {
		t.Fatalf("show -html: exit %d: %s", code, stderr)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "1"`)); err != nil {
		t.Fatalf("the report's script did not run: %v", err)
	}
	m, err := chromedp.Run(ctx, chromedp.Evaluate[marks](marksJS))
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1.5 {
			t.Errorf("%s drawn at %.1f, want %.1f (SVG units)", what, got, want)
		}
	}
	if m.Block.Since != float64(block.Since) || m.Block.End != float64(unblock.Since+unblock.Dur) || m.Block.Bytes != float64(block.N) {
		t.Errorf("block bar %+v, want since %d, end %d, %d bytes", m.Block, block.Since, unblock.Since+unblock.Dur, block.N)
	}
	near("the block bar's start", m.Block.X, m.Block.WantX)
	near("the block bar's width", m.Block.W, m.Block.WantW)
	if want := fmt.Sprintf("%d bytes blocked 24ms", block.N); !strings.Contains(m.BlockLabel, want) {
		t.Errorf("block bar says %q, want %q", m.BlockLabel, want)
	}
	if m.Cancel.T != float64(cancel.T) || m.Late.T != float64(late.T) {
		t.Errorf("cancel marker at %v, late marker at %v; want %d and %d", m.Cancel.T, m.Late.T, cancel.T, late.T)
	}
	near("the cancel marker", m.Cancel.X, m.Cancel.WantX)
	near("the late marker", m.Late.X, m.Late.WantX)

	sel := fmt.Sprintf(`g.req[data-req="in %s"] rect`, cancel.ID)
	if err := chromedp.Do(ctx, chromedp.Click(sel)); err != nil {
		t.Fatalf("clicking %s: %v", sel, err)
	}
	detail, err := chromedp.Run(ctx, chromedp.Text("#detail"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"request id 3 tools/call slow", `"name":"slow"`, "112 bytes at offset 338", "response id 3", "91 bytes"} {
		if !strings.Contains(detail, want) {
			t.Errorf("after clicking the request the panel lacks %q:\n%s", want, detail)
		}
	}
	shot(t, ctx, "report")
}

// TestReportLargeInBrowser: a record of 100,000 frames is written as HTML
// with a few seconds of CPU at most (CPU, not wall time, which a loaded
// machine stretches) and rendered by the browser within seconds, the page
// saying what it folded.
func TestReportLargeInBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	rec := filepath.Join(dir, "large.ndjson")
	writeLarge(t, rec, 50_000)
	html := filepath.Join(dir, "large.html")
	sctx, scancel, _ := bound.Context(context.Background(), t)
	defer scancel()
	show := exec.CommandContext(sctx, command(t), "show", "-html", html, rec)
	start := time.Now()
	if out, err := show.CombinedOutput(); err != nil {
		t.Fatalf("show -html: %v: %s", err, out)
	}
	written := time.Since(start)
	// The work it took, whatever else the machine is doing.
	cpu := show.ProcessState.UserTime() + show.ProcessState.SystemTime()
	fi, _ := os.Stat(html)
	start = time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "1"`)); err != nil {
		t.Fatalf("the report's script did not run: %v", err)
	}
	rendered := time.Since(start)
	t.Logf("100,000 frames: show -html took %v (%v of CPU; HTML of %d bytes), the browser loaded and ran it in %v", written, cpu, fi.Size(), rendered)
	if cpu > 5*time.Second || rendered > 10*time.Second {
		t.Errorf("100,000 frames took %v of CPU to write and %v to render, want a few seconds", cpu, rendered)
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil || !strings.Contains(text, "drawn as columns of counts") {
		t.Errorf("the large report does not say what it folded (%v)", err)
	}
	pending, err := chromedp.Run(ctx, chromedp.Text("table.pending"))
	if err != nil || !strings.Contains(pending, "50000") || !strings.Contains(pending, "tools/call echo") {
		t.Errorf("pending table %q (%v), want id 50000 tools/call echo", pending, err)
	}
	shot(t, ctx, "report-100k")
}

// writeLarge writes a record of n requests and n-1 responses with their
// chunks: the last request is never answered.
func writeLarge(t *testing.T, path string, n int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	seq := int64(0)
	emit := func(e record.Event) {
		e.Seq = seq
		seq++
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	emit(record.Event{Ev: record.EvHeader, Header: &record.Header{V: record.SchemaVersion, Schema: record.SchemaName, Start: time.Unix(0, 0).UTC(), Argv: []string{"large-server"}, Head: 256}})
	var inOff, outOff int64
	tm := int64(1000)
	for i := 1; i <= n; i++ {
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo"}}`, i)
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirIn, T: tm, T0: tm, Off: inOff, N: int64(len(req)), Kind: record.KindRequest, ID: json.RawMessage(fmt.Sprint(i)), Method: "tools/call", Tool: "echo", Head: req})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirIn, T: tm, Off: inOff, N: int64(len(req) + 1), WT: tm + 5})
		inOff += int64(len(req) + 1)
		if i == n {
			break
		}
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{}}`, i)
		emit(record.Event{Ev: record.EvFrame, Dir: record.DirOut, T: tm + 20, T0: tm + 20, Off: outOff, N: int64(len(resp)), Kind: record.KindResponse, ID: json.RawMessage(fmt.Sprint(i)), Head: resp})
		emit(record.Event{Ev: record.EvChunk, Dir: record.DirOut, T: tm + 20, Off: outOff, N: int64(len(resp) + 1), WT: tm + 30})
		outOff += int64(len(resp) + 1)
		tm += 50
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
