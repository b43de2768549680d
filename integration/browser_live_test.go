package integration_test

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// host is a test host on real pipes: the built proxy in front of the
// built fake server, its stdout read only when the test says so.
type host struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr strings.Builder
}

func startHost(t *testing.T, dir string, flags ...string) *host {
	t.Helper()
	bin := command(t)
	ctx, cancel, _ := bound.Context(context.Background(), t)
	t.Cleanup(cancel)
	h := &host{}
	args := append(append([]string{"proxy", "-dir", dir, "-log", filepath.Join(dir, "rec.ndjson")}, flags...), "--", bin, "fake")
	h.cmd = exec.CommandContext(ctx, bin, args...)
	h.cmd.WaitDelay = 5 * time.Second
	h.cmd.Stderr = &h.stderr
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil { // os.Pipe: real back-pressure
		t.Fatal(err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.stdout = bufio.NewReaderSize(out, 4096)
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.stdin.Close()
		go io.Copy(io.Discard, h.stdout)
		h.cmd.Wait()
	})
	return h
}

func (h *host) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		t.Fatalf("writing %.80s: %v\n%s", line, err, h.stderr.String())
	}
}

func (h *host) read(t *testing.T) string {
	t.Helper()
	l, err := h.stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the proxy's stdout: %v\n%s", err, h.stderr.String())
	}
	return l
}

// waitPage waits until the page's text satisfies the JavaScript predicate
// pred (over the variable t, the page's text) and returns how long it
// took; it fails the test with the page's text when the bound runs out.
func waitPage(t *testing.T, ctx context.Context, what, pred string, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const t = document.body.innerText; return `+pred+`; })()`,
		chromedp.WithPollingInterval(20*time.Millisecond), chromedp.WithPollingTimeout(bound.For(t, limit))))
	if err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the page did not show %s within %v: %v\npage:\n%s", what, bound.For(t, limit), err, text)
	}
	return time.Since(start)
}

// TestLivePageStall: a proxied session whose host stops reading during a
// large call. Within 2 s of the stall the live page shows the call
// pending (waiting, or responding once the record has the first bytes of
// its answer: which of the two depends on how far the record is behind the
// status), the host as not reading and the bytes the proxy holds; once the
// host reads again it shows the call delivered and the blocked write ended
// with its duration. Closing the page and the command changes nothing in
// the proxy, which answers the next call.
func TestLivePageStall(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	h := startHost(t, dir)
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"browser-test","version":"1"}}}`)
	h.read(t)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	url := liveServer(t, dir)
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	waitPage(t, ctx, "the proxy, nothing stuck", `t.includes("proxy ") && t.includes("nothing is stuck")`, time.Minute)

	// The stall: a 4 MiB answer the host does not read.
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":4194304}}}`)
	stalled := time.Now()
	took := waitPage(t, ctx, "the call pending, the host not reading, the bytes held",
		`/id 2 tools\/call big\s+(waiting|responding)/.test(t) && /STUCK: the host is not reading the server's output: a (write|splice) of/.test(t) && /held by the proxy for|the proxy holds none\) blocked for/.test(t)`, time.Minute)
	seen := time.Now()
	t.Logf("the page showed the stall %v after the call was sent", took)
	if took > 2*time.Second {
		t.Errorf("the page showed the stall %v after it began, want within 2s", took)
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	// On Linux the 4 MiB answer goes by splice (the host is on pipes): the
	// page then says the bytes are still in the server's pipe.
	if !regexp.MustCompile(`a write of \d+( bytes| KiB| MiB) held by the proxy|a splice of \d+( bytes| KiB| MiB) \(still in [^)]*, the proxy holds none\)`).MatchString(text) || !strings.Contains(text, "still blocked") {
		t.Errorf("the page does not say how many bytes are held or that the write is still blocked:\n%s", text)
	}
	shot(t, ctx, "live-stuck")
	if runtime.GOOS == "linux" {
		// The status file, rewritten once a second, adds the pipe levels
		// (FIONREAD) and the proxy's verdict.
		waitPage(t, ctx, "the pipe levels and the verdict", `/more waiting in the server's stdout pipe/.test(t) && t.includes("host is not reading the server's output: the response to id 2")`, time.Minute)
		shot(t, ctx, "live-stuck-status")
	}

	// Resume: the host reads the whole answer.
	resumed := time.Now()
	if l := h.read(t); len(l) < 4194304 {
		t.Fatalf("the answer is %d bytes, want over 4 MiB", len(l))
	}
	// On a loaded machine the observer may have lost detail of the 4 MiB
	// answer (it never holds traffic up): the page must then say the call
	// is unseen, never that it is still waiting.
	waitPage(t, ctx, "the call delivered (or unseen, detail lost) and the block ended",
		`/id 2 tools\/call big\s+(\+[0-9.]+s\s+delivered after|.*unseen)/.test(t) && /not reading the server's output\s+\d+( bytes| KiB| MiB)\s+\+[0-9.]+s\s+ended after/.test(t)`, time.Minute)
	if text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`)); !regexp.MustCompile(`id 2 tools/call big\s+\+[0-9.]+s\s+delivered after`).MatchString(text) {
		t.Logf("the observer lost detail of the answer: the page says the call is unseen")
	}
	blocks, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("table.blocks").innerText`))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`ended after ([0-9.]+(?:ms|s|µs))`).FindStringSubmatch(blocks)
	if m == nil {
		t.Fatalf("blocked writes table:\n%s", blocks)
	}
	d, err := time.ParseDuration(m[1])
	// The write was blocked when the page showed it and ended after the
	// host read again: it lasted at least from one to the other.
	if err != nil || d < resumed.Sub(seen)-50*time.Millisecond || d > time.Since(stalled) {
		t.Errorf("block ended after %q (%v): want between %v and %v", m[1], err, resumed.Sub(seen), time.Since(stalled))
	}
	shot(t, ctx, "live-delivered")

	// Closing the page and the command changes nothing in the proxy.
	if err := chromedp.Cancel(ctx); err != nil {
		t.Errorf("closing the browser: %v", err)
	}
	h.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if l := h.read(t); !strings.Contains(l, `"id":3`) {
		t.Errorf("after the page closed, ping answered %q", l)
	}
}
