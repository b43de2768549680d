package page

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

//go:embed assets/page.css
var pageCSS string

//go:embed assets/report.js
var reportJS string

// The pages' Content-Security-Policy: nothing but their own style and
// script, named by hash (no 'unsafe-inline'), may apply or run.
var (
	reportCSP = "default-src 'none'; style-src " + hashSource(pageCSS) + "; script-src " + hashSource(reportJS) + "; base-uri 'none'; form-action 'none'"
	liveCSP   = "default-src 'none'; style-src " + hashSource(pageCSS) + "; script-src " + hashSource(liveJS) + "; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// hashSource is a CSP source naming an inline <script> or <style> by its
// content's SHA-256.
func hashSource(content string) string {
	h := sha256.Sum256([]byte(content))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}

// WriteHTML writes s as one self-contained HTML file named for the record
// title: inline CSS, an inline SVG timeline and a little inline script,
// nothing fetched from anywhere. Large records stay quick to open: frames
// beyond a few thousand per direction are drawn as columns of counts and
// the page says so. It holds only what the record holds.
func (s *Session) WriteHTML(w io.Writer, title string) error {
	v := s.timeline(0, max(s.End, 1), 0)
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">")
	fmt.Fprintf(&b, `<meta http-equiv="Content-Security-Policy" content="%s">`, esc(reportCSP))
	fmt.Fprintf(&b, "<title>mcpstdio record %s</title><style>%s</style></head><body>\n", esc(title), pageCSS)
	fmt.Fprintf(&b, "<header><h1>mcpstdio record %s</h1><div class=\"meta\">%s</div></header>\n<main>\n", esc(title), esc(s.headerLine()))
	s.htmlVerdicts(&b)
	b.WriteString("<h2>timeline</h2>\n")
	legend(&b)
	b.WriteString(v.SVG)
	for _, f := range v.Folded {
		fmt.Fprintf(&b, "<p class=\"folded\">folded: %s</p>\n", esc(f))
	}
	b.WriteString("<div class=\"cols\"><section><h2>pending at the end</h2>\n")
	s.htmlPending(&b)
	b.WriteString("<h2>lost detail</h2>\n")
	class := ""
	if s.Lost != (Lost{}) || s.cut != nil {
		class = ` class="lost"`
	}
	for _, l := range s.lostLines() {
		fmt.Fprintf(&b, "<p%s>%s</p>\n", class, esc(l))
	}
	if n := s.clampedNote(); n != "" {
		fmt.Fprintf(&b, "<p class=\"lost\">%s</p>\n", esc(n))
	}
	b.WriteString("</section><section><h2>selected</h2><div id=\"detail\">click a frame or a request on the timeline to see its frame: head, size, id, method, tool</div></section></div>\n")
	s.htmlMetrics(&b)
	b.WriteString("<details><summary>text timeline</summary><pre>")
	for _, l := range fold(s.lines(), 3, 2) {
		fmt.Fprintf(&b, "%9s  %s\n", at(l.t), esc(l.text))
	}
	b.WriteString("</pre></details>\n</main>\n")
	js, err := json.Marshal(v.Detail) // escapes <, > and &: no "</script>" inside
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "<script id=\"frames\" type=\"application/json\">%s</script>\n<script>%s</script>\n</body></html>\n", js, reportJS)
	_, err = io.WriteString(w, b.String())
	return err
}

func (s *Session) headerLine() string {
	h := s.Header
	if h == nil {
		return "no header"
	}
	l := fmt.Sprintf("server %s · started %s · lasted %s", strings.Join(h.Argv, " "), h.Start, dur(s.End))
	if h.Proxy != "" {
		l += fmt.Sprintf(" · proxy %s on %s/%s", h.Proxy, h.OS, h.Arch)
	}
	l += fmt.Sprintf(" · pipes: server stdout %s, host stdout %s", pipe(h.Pipes.ServerStdout), pipe(h.Pipes.HostStdout))
	if s.Ended != "" {
		l += " · " + s.Ended
	}
	if s.Unended != "" {
		l += " · " + s.Unended
	}
	return l
}

func legend(b *strings.Builder) {
	b.WriteString(`<div class="legend"><span><i class="lg-req"></i>request</span><span><i class="lg-resp"></i>response</span>` +
		`<span><i class="lg-note"></i>notification</span><span><i class="lg-err"></i>error / late answer</span>` +
		`<span><i class="lg-block"></i>blocked write (bytes held)</span><span><i class="lg-stall"></i>stall (fault)</span>` +
		`<span><i class="lg-cancel"></i>cancel</span><span><i class="lg-undelivered"></i>request not delivered</span></div>` + "\n")
}

func (s *Session) htmlVerdicts(b *strings.Builder) {
	fmt.Fprintf(b, "<h2>verdicts</h2>%s<ul class=\"verdicts\">", s.fromEventsHTML())
	if len(s.Verdicts) == 0 {
		b.WriteString("<li class=\"ok\">nothing was found stuck</li>")
	}
	shown, more := s.shownVerdicts()
	for _, v := range shown {
		fmt.Fprintf(b, "<li data-kind=\"%s\">%s</li>", esc(v.Kind), esc(v.Text))
	}
	b.WriteString("</ul>\n")
	if more != "" {
		fmt.Fprintf(b, "<p class=\"folded\">%s</p>\n", esc(more))
	}
}

func (s *Session) htmlPending(b *strings.Builder) {
	for _, p := range s.unclaimed() {
		fmt.Fprintf(b, "<p class=\"lost\">%s</p>\n", esc(p.text()))
	}
	if len(s.Pending) == 0 {
		b.WriteString("<p>none: every request's response was delivered</p>\n")
		return
	}
	b.WriteString("<table class=\"pending\"><tr><th>direction</th><th>id</th><th>method</th><th>state</th><th>sent</th><th>waited</th><th>response</th><th>cancel</th></tr>\n")
	first, more, last := s.shownPending()
	s.htmlPendingRows(b, first)
	if more != "" {
		fmt.Fprintf(b, "<tr class=\"more\"><td colspan=\"8\">%s</td></tr>\n", esc(more))
	}
	s.htmlPendingRows(b, last)
	b.WriteString("</table>\n")
}

func (s *Session) htmlPendingRows(b *strings.Builder, rs []Request) {
	for _, r := range rs {
		cancel := ""
		if r.Cancel > 0 {
			cancel = at(r.Cancel) + " (" + r.CancelAt + ")" // escaped below, as every string from a record
		}
		fmt.Fprintf(b, "<tr class=\"stuck\"><td>%s</td><td class=\"mono\">%s</td><td>%s</td><td class=\"state-%s\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			esc(dirName(r.Dir)), esc(string(r.ID)), esc(strings.TrimSpace(r.Method+" "+r.Tool)), esc(r.State), esc(r.State), at(r.Sent), dur(s.End-r.Sent), respCell(r), esc(cancel))
	}
}

func respCell(r Request) string {
	switch {
	case r.RespBytes > 0:
		return size(r.RespBytes) + " read, not all delivered"
	case r.RespRead > 0:
		return size(r.RespRead) + " read, " + size(r.RespSent) + " delivered (in progress)"
	}
	return "none"
}

// fromEventsHTML notes, after a heading, that what follows was worked out
// from the events.
func (s *Session) fromEventsHTML() string {
	if s.Summary {
		return ""
	}
	return "<p class=\"folded\">" + esc(strings.TrimSuffix(strings.TrimPrefix(s.fromEvents(), " ("), ")")) + "</p>"
}

func (s *Session) htmlMetrics(b *strings.Builder) {
	m := s.Metrics
	fmt.Fprintf(b, "<h2>metrics</h2>%s\n", s.fromEventsHTML())
	if m == nil {
		b.WriteString("<p>none</p>\n")
		return
	}
	rows := [][2]string{
		{"requests / responses / notifications", fmt.Sprintf("%d / %d / %d", m.Requests, m.Responses, m.Notifications)},
		{"server requests / cancels / late responses / unknown responses", fmt.Sprintf("%d / %d / %d / %d", m.ServerRequests, m.Cancels, m.LateResponses, m.UnknownResponses)},
		{"stdin", fmt.Sprintf("%s in %d frames, largest request %s", size(m.StdinBytes), m.StdinFrames, size(m.LargestRequest))},
		{"stdout", fmt.Sprintf("%s in %d frames, largest %s", size(m.StdoutBytes), m.StdoutFrames, size(m.LargestFrame))},
		{"stderr", size(m.StderrBytes)},
		{"blocked writes: server's stdin / host's stdout / host's stderr", dur(m.BlockedInUS) + " / " + dur(m.BlockedOutUS) + " / " + dur(m.BlockedErrUS)},
		{"parse errors (server / host), unterminated lines", fmt.Sprintf("%d / %d, %d", m.ParseErrors, m.HostParseErrors, m.Unterminated)},
		{"how the server ended", s.terminations(m.Terminations)},
	}
	if h := s.faultHolds(); h != "" {
		rows = append(rows[:6], append([][2]string{{"held by faults (not in the blocked writes)", h}}, rows[6:]...)...)
	}
	b.WriteString("<table class=\"metrics\">")
	for _, r := range rows {
		fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td></tr>", esc(r[0]), esc(r[1]))
	}
	b.WriteString("</table>\n")
}
