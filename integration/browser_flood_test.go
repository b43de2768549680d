package integration_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// TestFloodInBrowser: a server that stops answering while the host sends
// 20,000 calls and then cancels each, through the real proxy. The live
// page keeps polling (it froze Chromium: 19 MiB of status.json twice a
// second) and draws a bounded page, and the report of the record opens
// and draws a bounded page (it was 18 MiB and took 25 s to open). Each
// says what it left out.
func TestFloodInBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	h := startHost(t, dir)
	h.send(t, initialize)
	h.read(t)
	const n = 20_000
	var b strings.Builder
	for i := 2; i < n+2; i++ {
		// slow, with no progress token: it answers only after its last
		// step, a minute on; cancelled, it never answers.
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":60000}}}`+"\n", i)
	}
	for i := 2; i < n+2; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"timeout"}}`+"\n", i)
	}
	h.send(t, strings.TrimSuffix(b.String(), "\n"))
	h.send(t, `{"jsonrpc":"2.0","id":1000000,"method":"ping"}`)
	if l := h.read(t); !strings.Contains(l, `"id":1000000`) {
		t.Fatalf("after the flood, ping answered %q", l)
	}
	url := liveServer(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the flood counted", `/cancels in the window: the latest 200 drawn one by one/.test(t) && /more pending requests, not listed|more unfinished requests, not listed/.test(t)`, 2*time.Minute)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`+document.body.dataset.polls >= 3`, chromedp.WithPollingTimeout(bound.For(t, time.Minute)))); err != nil {
		t.Fatalf("the live page stopped polling: %v", err)
	}
	elems, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
	if err != nil || elems > 10_000 {
		t.Errorf("the live page has %d elements (%v), want a bounded page", elems, err)
	}
	t.Logf("live page: %d elements", elems)
	shot(t, ctx, "live-flood")

	h.stdin.Close()
	h.cmd.Wait()
	html := filepath.Join(dir, "flood.html")
	if _, stderr, code := run(t, "show", "-html", html, filepath.Join(dir, "rec.ndjson")); code != 0 {
		t.Fatalf("show -html: exit %d: %s", code, stderr)
	}
	fi, _ := os.Stat(html)
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+html)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "1"`, chromedp.WithPollingTimeout(bound.For(t, time.Minute)))); err != nil {
		t.Fatalf("the report's script did not run: %v", err)
	}
	elems, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.getElementsByTagName("*").length`))
	t.Logf("report: %d bytes, %d elements, ready in %v", fi.Size(), elems, time.Since(start))
	if err != nil || elems > 10_000 || fi.Size() > 2<<20 {
		t.Errorf("the report: %d bytes, %d elements (%v), want a bounded page", fi.Size(), elems, err)
	}
	shot(t, ctx, "report-flood")
}
