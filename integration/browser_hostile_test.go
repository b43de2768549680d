package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// hostileRecord (written by the page package's tests) has a payload in
// every string field: <script> and <img onerror> markup, attribute
// breakouts (x" autofocus onfocus=…, x' onmouseover=…, and x"
// style="content-visibility:auto" oncontentvisibilityautostatechange=…,
// which runs with no click), each setting document.title; and terminal
// escapes.
var hostileRecord = filepath.Join("..", "cmd", "internal", "page", "testdata", "hostile.ndjson")

// hostilePayloads are the status file's payloads, as the record's.
var hostilePayloads = []string{
	`<script>document.title="pwned"</script>`,
	`<img src=x onerror="document.title='pwned'">`,
	`x" autofocus onfocus="document.title='pwned'" y="`,
	`x' onmouseover='document.title=1' y='`,
	`x" style="content-visibility:auto" oncontentvisibilityautostatechange="document.title='pwned'" y="`,
}

// watchJS runs in every new document before the page's own script (from
// DevTools, so the page's CSP does not apply to it): it records every
// attempt to set document.title (what each payload does) and every CSP
// violation.
const watchJS = `(() => {
  window.__ran = []; window.__violations = [];
  Object.defineProperty(document, "title", { configurable: true, get() { return "watched"; }, set(v) { window.__ran.push(String(v)); } });
  document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective + " " + e.blockedURI + " " + (e.sample || "")));
})()`

// exerciseJS clicks every frame and request the page drew, hovers and
// focuses every element, scrolls to the end (content-visibility), then
// waits two frames and reports what ran and what the DOM holds.
const exerciseJS = `(async () => {
  const all = [...document.querySelectorAll("*")];
  for (const el of document.querySelectorAll("[data-f], .req")) el.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  for (const el of all) { el.dispatchEvent(new MouseEvent("mouseover", { bubbles: true })); if (el.focus) el.focus(); }
  window.scrollTo(0, document.body.scrollHeight);
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  await new Promise(r => setTimeout(r, 100));
  return {
    Ran: window.__ran, Violations: window.__violations,
    Handlers: [...document.querySelectorAll("*")].flatMap(e => [...e.attributes].filter(a => a.name.startsWith("on") || a.name === "style" || a.name === "autofocus").map(a => e.tagName + " " + a.name)),
    Imgs: document.querySelectorAll("img").length, Scripts: document.scripts.length,
    Text: document.body.innerText, Detail: (document.getElementById("detail") || {}).innerText || "",
  };
})()`

type exercised struct {
	Ran, Violations, Handlers []string
	Imgs, Scripts             int
	Text, Detail              string
}

// openWatched opens url in a fresh tab of ctx with watchJS installed.
func openWatched(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	inject := func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		var res json.RawMessage
		return chromedp.Void{}, tg.Call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": watchJS}, &res)
	}
	if err := chromedp.Do(ctx, inject, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
}

func checkExercised(t *testing.T, what string, e exercised, scripts int) {
	t.Helper()
	if len(e.Ran) > 0 {
		t.Errorf("%s: a payload ran: document.title set to %q", what, e.Ran)
	}
	if len(e.Violations) > 0 {
		t.Errorf("%s: CSP violations (a payload tried to run, or the page's own code was refused): %q", what, e.Violations)
	}
	if len(e.Handlers) > 0 || e.Imgs > 0 || e.Scripts != scripts {
		t.Errorf("%s: the DOM holds payload markup: handler or style attributes %q, %d <img>, %d scripts (want %d)", what, e.Handlers, e.Imgs, e.Scripts, scripts)
	}
}

// TestHostileReportInBrowser: the show -html report of a record with a
// payload in every string field, opened in headless Chromium, clicked,
// hovered, focused and scrolled through: its own script runs (allowed by
// its hash), no payload runs, no CSP violation is reported (nothing even
// tried), and the payloads are shown as text.
func TestHostileReportInBrowser(t *testing.T) {
	ctx := browser(t)
	html := filepath.Join(t.TempDir(), "hostile.html")
	if _, stderr, code := run(t, "show", "-html", html, hostileRecord); code != 0 {
		t.Fatalf("show -html: exit %d: %s", code, stderr)
	}
	openWatched(t, ctx, "file://"+html)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.dataset.ready === "1"`, chromedp.WithPollingTimeout(bound.For(t, time.Minute)))); err != nil {
		t.Fatalf("the report's own script did not run (its CSP hash?): %v", err)
	}
	e, err := chromedp.Run(ctx, chromedp.Evaluate[exercised](exerciseJS, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	checkExercised(t, "the report", e, 2)
	for _, p := range hostilePayloads {
		if !strings.Contains(e.Text+e.Detail, p) {
			t.Errorf("the report does not show the payload %q as text", p)
		}
	}
	shot(t, ctx, "report-hostile")
}

// TestHostileLivePageInBrowser: the live page (status -http) of a proxy
// whose status file and record have a payload in every string field,
// polled, clicked, hovered, focused and scrolled through in headless
// Chromium: its script runs (allowed by its hash) and draws the proxy,
// no payload runs, no CSP violation is reported, the payloads show as
// text.
func TestHostileLivePageInBrowser(t *testing.T) {
	ctx := browser(t)
	dir := t.TempDir()
	rec, err := os.ReadFile(hostileRecord)
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "hostile.ndjson")
	if err := os.WriteFile(log, rec, 0o600); err != nil {
		t.Fatal(err)
	}
	p := func(i int) string { return hostilePayloads[i%len(hostilePayloads)] }
	id := func(i int) json.RawMessage { b, _ := json.Marshal(p(i)); return b }
	pipe := 100
	now := time.Now()
	st := statusFile{Status: proxy.Status{ProxyPID: 1, ServerPID: 2, Argv: hostilePayloads, Start: now.Add(-time.Second), Updated: now, Running: false,
		Exit: &proxy.ExitInfo{Text: p(0), Signal: p(1)},
		Streams: []proxy.StreamStatus{
			{Dir: p(2), Read: 10, BlockedUS: 300000, BlockedBytes: 5, SourcePipe: &pipe, DestPipe: &pipe, Current: &proxy.CurrentFrame{ID: id(3), Method: p(4), Bytes: 1}},
			{Dir: record.DirOut, Read: 10, BlockedUS: 300000, BlockedBytes: 5},
		},
		Pending: []proxy.PendingStatus{
			{Dir: p(0), ID: id(1), Method: p(2), Tool: p(3), State: p(4), AgeUS: 5, Progress: 1, CancelledUS: 3, ResponseBytes: 2},
			{Dir: record.DirIn, ID: id(4), Method: p(0), Tool: p(1), State: p(2)},
		},
		Verdicts: []record.Verdict{{Kind: p(4), ID: id(0), Text: p(1)}, {Kind: p(2), Text: p(3)}},
	}, Log: log, Problems: hostilePayloads}
	path := filepath.Join(dir, "1.status.json")
	if err := writeStatus(path, st); err != nil {
		t.Fatal(err)
	}
	// Rewritten every second, as a proxy does, so that it never goes stale
	// however long the browser takes.
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				st.Updated = time.Now()
				writeStatus(path, st)
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	url := liveServer(t, dir)
	openWatched(t, ctx, url)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`+document.body.dataset.polls >= 2 && document.querySelector(".card") !== null`, chromedp.WithPollingTimeout(bound.For(t, time.Minute)))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("the live page did not draw the proxy twice (its script refused by the CSP?): %v\n%s", err, text)
	}
	e, err := chromedp.Run(ctx, chromedp.Evaluate[exercised](exerciseJS, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	checkExercised(t, "the live page", e, 1)
	for _, p := range hostilePayloads {
		if !strings.Contains(e.Text, p) {
			t.Errorf("the live page does not show the payload %q as text", p)
		}
	}
	shot(t, ctx, "live-hostile")
}

// statusFile is what `mcpstdio proxy` writes beside its record (the
// command's internal state.Status, which this module cannot import).
type statusFile struct {
	proxy.Status
	Log      string   `json:"log,omitempty"`
	Problems []string `json:"problems,omitempty"`
}

// writeStatus writes st to path as the proxy does: a temporary file
// beside it, then a rename.
func writeStatus(path string, st statusFile) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
