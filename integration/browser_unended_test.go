package integration_test

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"browser-test","version":"1"}}}`

// TestLivePageKilledProxy: a proxied session whose host stops reading 4
// MiB into a large answer. The live page counts one proxy in the singular
// and shows how much of the answer was read and delivered (not "none");
// once the proxy is killed with SIGKILL (no summary written) and its
// status file is stale, the page (with -all) says the proxy is gone and
// where its record ends, with the verdict's duration worked out from the
// record up to that end, not as the status file last said it.
func TestLivePageKilledProxy(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	h := startHost(t, dir)
	h.send(t, initialize)
	h.read(t)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	url := liveServer(t, dir, "-all")
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":16777216}}}`)
	// The status file (rewritten each second) names the line in progress.
	waitPage(t, ctx, "the answer in progress with its bytes", `/id 2 tools\/call big[^\n]*\d+(\.\d)? (KiB|MiB) read, \d+(\.\d)? (bytes|KiB|MiB) delivered \(in progress\)/.test(t)`, time.Minute)
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("meta").innerText`)); !strings.HasPrefix(text, "1 proxy running · ") {
		t.Errorf("the page's heading says %q, want it to start with \"1 proxy running · \"", text)
	}
	shot(t, ctx, "live-in-progress")
	killed := time.Now()
	h.cmd.Process.Signal(syscall.SIGKILL)
	h.cmd.Wait()
	took := waitPage(t, ctx, "the proxy gone, where its record ends, the stall's full duration",
		`/STALE: the record ends at \+[0-9.]+s \(.*\) without the proxy's summary: the proxy \(pid \d+\) is gone/.test(t) && /host is not reading the server's output for [0-9.]+(s|ms) at least, still when the record ends/.test(t) && t.includes("from the record's events:")`, time.Minute)
	t.Logf("the page said the proxy was gone %v after the kill", took)
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	if strings.Contains(text, "NaN") {
		t.Errorf("the page shows NaN:\n%s", text)
	}
	// The record ends within the proxy's life: the stall it reports lasted
	// at most from the call to the kill (rounded to a tenth of a second).
	m := regexp.MustCompile(`host is not reading the server's output for ([0-9.]+(?:s|ms)) at least, still when the record ends`).FindStringSubmatch(text)
	if d, err := time.ParseDuration(m[1]); err != nil || d > killed.Sub(sent)+100*time.Millisecond {
		t.Errorf("a stall of %q (%v) in a record whose call was sent %v before the kill", m[1], err, killed.Sub(sent))
	}
	shot(t, ctx, "live-gone")
}

// TestLivePageFaultStall: the proxy's own stop fault holds the server's
// stdout; the live page's table of blocked writes and stalls names the
// fault and what it holds, with no byte count it does not have (it said
// "NaN bytes").
func TestLivePageFaultStall(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	h := startHost(t, dir, "-fault", "out:stop:after_bytes=1000")
	h.send(t, initialize)
	h.read(t)
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":1048576}}}`)
	url := liveServer(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the fault's stall in the table", `t.includes("the proxy's fault out:stop holds the server's stdout pipe")`, time.Minute)
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.blocks").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(rows, "NaN") || !strings.Contains(rows, "(in the pipe)") || !strings.Contains(rows, "still in effect") {
		t.Errorf("blocked writes and stalls:\n%s", rows)
	}
	shot(t, ctx, "live-fault")
	// The fault holds the server's stdout until the session ends (the
	// host's stdin stays open here): end the proxy (its server goes with
	// it).
	h.cmd.Process.Signal(syscall.SIGKILL)
}
