package page

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/record"
)

// WriteText writes the summary of s for a terminal: the header, the
// verdicts in words, the metrics, what was pending at the end, how much
// detail was lost, and a timeline of the events that matter with times
// since the start, long runs of ordinary frames folded into one line.
func (s *Session) WriteText(w io.Writer) error {
	var b strings.Builder
	s.writeHeader(&b)
	b.WriteString("\nverdicts" + s.fromEvents() + "\n")
	if len(s.Verdicts) == 0 {
		b.WriteString("  nothing was found stuck\n")
	}
	shown, more := s.shownVerdicts()
	for _, v := range shown {
		tline(&b, "  - %s", v.Text)
	}
	if more != "" {
		tline(&b, "  %s", more)
	}
	if m := s.Metrics; m != nil {
		b.WriteString("\nmetrics" + s.fromEvents() + "\n")
		tline(&b, "  requests %d, responses %d, notifications %d, server requests %d, cancels %d, late responses %d, unknown responses %d",
			m.Requests, m.Responses, m.Notifications, m.ServerRequests, m.Cancels, m.LateResponses, m.UnknownResponses)
		tline(&b, "  stdin %s in %d frames (largest request %s); stdout %s in %d frames (largest %s); stderr %s",
			size(m.StdinBytes), m.StdinFrames, size(m.LargestRequest), size(m.StdoutBytes), m.StdoutFrames, size(m.LargestFrame), size(m.StderrBytes))
		tline(&b, "  blocked writes: server's stdin %s, host's stdout %s, host's stderr %s", dur(m.BlockedInUS), dur(m.BlockedOutUS), dur(m.BlockedErrUS))
		if h := s.faultHolds(); h != "" {
			tline(&b, "  held by faults (not in the blocked writes): %s", h)
		}
		tline(&b, "  parse errors %d (host %d), unterminated lines %d, %s", m.ParseErrors, m.HostParseErrors, m.Unterminated, s.terminations(m.Terminations))
	}
	b.WriteString("\npending at the end\n")
	if len(s.Pending) == 0 && len(s.unclaimed()) == 0 {
		b.WriteString("  none\n")
	}
	first, more, last := s.shownPending()
	for _, r := range first {
		tline(&b, "  %s %s: %s, sent at %s%s", dirName(r.Dir), describe(r.ID, r.Method, r.Tool), StateText(r.State), at(r.Sent), pendingNote(r, s.End))
	}
	if more != "" {
		tline(&b, "  %s", more)
	}
	for _, r := range last {
		tline(&b, "  %s %s: %s, sent at %s%s", dirName(r.Dir), describe(r.ID, r.Method, r.Tool), StateText(r.State), at(r.Sent), pendingNote(r, s.End))
	}
	for _, p := range s.unclaimed() {
		tline(&b, "  %s", p.text())
	}
	b.WriteString("\nlost detail\n")
	for _, l := range s.lostLines() {
		tline(&b, "  %s", l)
	}
	if n := s.clampedNote(); n != "" {
		tline(&b, "  %s", n)
	}
	b.WriteString("\ntimeline\n")
	for _, l := range fold(s.lines(), 3, 2) {
		tline(&b, "  %9s  %s", at(l.t), l.text)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tline writes one line of the terminal summary. Much of it comes from
// the record (methods, ids, errors, stderr heads), so the whole line goes
// through term.Line: no control character in a record can move the
// cursor, set the title or start a line of its own.
func tline(b *strings.Builder, format string, a ...any) {
	b.WriteString(term.Line(fmt.Sprintf(format, a...)))
	b.WriteByte('\n')
}

// maxVerdictsOfAKind is how many verdicts of one kind a summary lists (a
// proxy writes one per request unanswered: a flood has thousands).
const maxVerdictsOfAKind = 5

// shownVerdicts returns the verdicts a summary lists, the first
// maxVerdictsOfAKind of each kind, and a line counting the others ("" if
// none is left out).
func (s *Session) shownVerdicts() ([]record.Verdict, string) {
	var shown []record.Verdict
	n := map[string]int{}
	var order []string
	for _, v := range s.Verdicts {
		if n[v.Kind]++; n[v.Kind] <= maxVerdictsOfAKind {
			shown = append(shown, v)
		} else if n[v.Kind] == maxVerdictsOfAKind+1 {
			order = append(order, v.Kind)
		}
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[k]-maxVerdictsOfAKind, k))
	}
	if len(parts) == 0 {
		return shown, ""
	}
	return shown, "… and more verdicts, not listed: " + strings.Join(parts, ", ") + " (show -json lists them all)"
}

// maxPendingListed is how many pending requests a list shows: the oldest
// half and the latest half; the others are counted.
const maxPendingListed = 20

// shownPending splits the pending requests into those listed first, a
// line that counts those not listed ("" if none is left out), and those
// listed last.
func (s *Session) shownPending() (first []Request, more string, last []Request) {
	p := s.Pending
	if len(p) <= maxPendingListed {
		return p, "", nil
	}
	half := maxPendingListed / 2
	mid := p[half : len(p)-half]
	states := map[string]int{}
	var order []string
	cancelled := 0
	for _, r := range mid {
		if states[r.State] == 0 {
			order = append(order, r.State)
		}
		states[r.State]++
		if r.Cancel > 0 {
			cancelled++
		}
	}
	var parts []string
	for _, st := range order {
		parts = append(parts, fmt.Sprintf("%d %s", states[st], st))
	}
	if cancelled > 0 {
		parts = append(parts, fmt.Sprintf("%d of them cancelled", cancelled))
	}
	more = fmt.Sprintf("… %d more pending requests, sent from %s to %s: %s", len(mid), at(mid[0].Sent), at(mid[len(mid)-1].Sent), strings.Join(parts, ", "))
	return p[:half], more, p[len(p)-half:]
}

func pendingNote(r Request, end int64) string {
	var n []string
	n = append(n, dur(end-r.Sent)+" before the record ends")
	if r.RespBytes > 0 {
		n = append(n, "response "+size(r.RespBytes)+" read, not all delivered")
	}
	if r.RespRead > 0 {
		n = append(n, "response in progress: "+size(r.RespRead)+" read so far, "+size(r.RespSent)+" of it delivered, its end not in the record")
	}
	if r.Cancel > 0 {
		n = append(n, "cancelled at "+at(r.Cancel))
	}
	if r.Progress > 0 {
		n = append(n, fmt.Sprintf("%d progress notifications", r.Progress))
	}
	return ", " + strings.Join(n, ", ")
}

func (s *Session) writeHeader(b *strings.Builder) {
	h := s.Header
	if h == nil {
		tline(b, "record  no header (not the first file of a record?), %s of events", dur(s.End))
		return
	}
	tline(b, "record  started %s, lasted %s, %d file(s), proxy %s (pid %d), %s/%s", h.Start, dur(s.End), h.Parts, h.Proxy, h.PID, h.OS, h.Arch)
	tline(b, "server  %s", strings.Join(h.Argv, " "))
	p := h.Pipes
	tline(b, "pipes   server stdin %s, stdout %s, stderr %s; host stdin %s, stdout %s, stderr %s",
		pipe(p.ServerStdin), pipe(p.ServerStdout), pipe(p.ServerStderr), pipe(p.HostStdin), pipe(p.HostStdout), pipe(p.HostStderr))
	kept := "each frame's first " + size(int64(h.Head)) + ", length and hash"
	if h.Bodies {
		kept = "every byte"
	}
	tline(b, "kept    %s; %d environment variable names, no values", kept, h.Env)
	if len(h.Redact) > 0 || len(h.Keys) > 0 {
		tline(b, "redact  paths %s; keys containing %s", list(h.Redact), list(h.Keys))
	}
	for _, f := range h.Faults {
		tline(b, "fault   %s:%s", f.Dir, f.Kind)
	}
	if s.Ended != "" {
		tline(b, "ended   %s", strings.TrimPrefix(s.Ended, "the server ended: "))
	}
	if s.Unended != "" {
		tline(b, "end     %s", s.Unended)
	}
}

// fromEvents notes, after a heading, that what follows was worked out from
// the events: the record has no summary.
func (s *Session) fromEvents() string {
	if s.Summary {
		return ""
	}
	return " (worked out from the events up to " + at(s.End) + ": the record has no summary)"
}

// unclaimed are the lines in progress at the end that are no request's
// response as far as the record tells.
func (s *Session) unclaimed() []Partial {
	var ps []Partial
	for _, p := range s.Partial {
		if i, ok := s.latest(other(p.Dir), p.ID); !ok || len(p.ID) == 0 || s.Requests[i].RespRead == 0 {
			ps = append(ps, p)
		}
	}
	return ps
}

// text says what is known of a line in progress.
func (p Partial) text() string {
	t := fmt.Sprintf("%s: a message in progress, %s read from %s on (%s of it delivered); its end is not in the record", dirName(p.Dir), size(p.Read), at(p.Since), size(p.Delivered))
	if len(p.ID) > 0 {
		t += "; the proxy named it the response to id " + string(p.ID)
	}
	return t
}

func pipe(n int) string {
	if n == 0 {
		return "?"
	}
	return size(int64(n))
}

func list(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// line is one line of the text timeline; plain lines (ordinary frames,
// live verdicts) may be folded.
type line struct {
	t     int64
	seq   int64
	text  string
	plain bool
	frame *Frame
	kind  string // what a folded line counts as, for a line that is not a frame's
	item  bool   // one of many of its kind: a notable request's frame, a cancel, a late answer
}

// maxItemLines is how many lines of each per-item kind (notable requests'
// frames, cancels, late answers, other events) the text timeline shows
// one by one: the latest; earlier ones fold with the ordinary frames.
const maxItemLines = 200

// lines returns the timeline's lines in time order.
func (s *Session) lines() []line {
	important := map[int]bool{}
	for _, r := range s.Requests {
		if r.State != "delivered" || r.Cancel > 0 || r.LateUS > 0 || r.Error {
			important[r.Frame] = true
			if r.Response >= 0 {
				important[r.Response] = true
			}
		}
	}
	resp := map[int]*Request{}
	for i := range s.Requests {
		if r := &s.Requests[i]; r.Response >= 0 {
			resp[r.Response] = r
		}
	}
	var ls []line
	for i := range s.Frames {
		f := &s.Frames[i]
		text := fmt.Sprintf("%-3s %s (%s)", f.Dir, f.name(), size(f.N))
		if r := resp[i]; r != nil {
			text += " after " + dur(f.T0-r.Sent)
			if f.T-f.T0 >= 1000 {
				text += ", read over " + dur(f.T-f.T0)
			}
			if r.Delivered > 0 && r.Delivered-f.T >= 1000 {
				text += ", delivered " + dur(r.Delivered-f.T) + " later"
			}
		}
		if f.Unterminated {
			text += ", no newline: the stream ended before it"
		}
		if f.Kind == "junk" && f.Head != "" {
			text += ": " + clip(f.Head, 60)
		}
		ls = append(ls, line{t: f.T0, seq: f.Seq, text: text, plain: !important[i] && f.Kind != "junk", frame: f, item: important[i] || f.Kind == "junk"})
	}
	for _, b := range s.Blocks {
		what := "a write of " + size(b.N) + " to " + destName(b.Dir) + " blocked"
		ended, still := "UNBLOCK "+destName(b.Dir), "still blocked: "+destName(b.Dir)
		if b.Kind != "block" {
			what = "STALL fault " + b.Dir + ":" + b.Kind + ": " + b.Text
			ended, still = "STALL ENDED fault "+b.Dir+":"+b.Kind, "still stalled: fault "+b.Dir+":"+b.Kind
		} else {
			what = "BLOCK " + what
		}
		ls = append(ls, line{t: b.Since, text: what})
		if b.End > 0 {
			ls = append(ls, line{t: b.End, text: fmt.Sprintf("%s after %s", ended, dur(b.End-b.Since))})
		} else {
			ls = append(ls, line{t: s.End, text: fmt.Sprintf("%s, %s at the end of the record", still, dur(s.End-b.Since))})
		}
	}
	for _, m := range s.Marks {
		if m.Ev == "fault" && strings.Contains(m.Text, ":stop: stopped") || strings.Contains(m.Text, ":sigstop: stopped") {
			continue // a stall line above
		}
		ls = append(ls, line{t: m.T, text: strings.ToUpper(m.Ev) + " " + m.Text, plain: m.Ev == "verdict", kind: m.Ev, item: m.Ev != "verdict"})
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].t < ls[j].t })
	// Beyond the latest maxItemLines of a kind, its lines fold.
	seen := map[string]int{}
	for i := len(ls) - 1; i >= 0; i-- {
		if l := &ls[i]; l.item {
			k := l.kind
			if l.frame != nil {
				k = "frame"
			}
			if seen[k]++; seen[k] > maxItemLines {
				l.plain = true
			}
		}
	}
	return ls
}

func destName(d string) string {
	switch d {
	case "in":
		return "the server's stdin"
	case "out":
		return "the host's stdout"
	case "err":
		return "the host's stderr"
	}
	return d
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// fold replaces each run of more than head+tail+1 plain lines by its first
// head lines, one line saying what was folded, and its last tail lines.
func fold(ls []line, head, tail int) []line {
	var out []line
	for i := 0; i < len(ls); {
		j := i
		for j < len(ls) && ls[j].plain {
			j++
		}
		if j-i > head+tail+1 {
			out = append(out, ls[i:i+head]...)
			out = append(out, line{t: ls[i+head].t, text: foldText(ls[i+head : j-tail])})
			out = append(out, ls[j-tail:j]...)
		} else {
			out = append(out, ls[i:j]...)
		}
		if j < len(ls) {
			out = append(out, ls[j])
			j++
		}
		i = j
	}
	return out
}

func foldText(ls []line) string {
	counts := map[string]int{}
	var order []string
	var bytes int64
	for _, l := range ls {
		k := l.kind
		if f := l.frame; f != nil {
			k = f.Dir + " " + f.Kind
			if f.Method != "" {
				k += " " + f.Method
			}
			bytes += f.N
		}
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	sort.SliceStable(order, func(i, j int) bool { return counts[order[i]] > counts[order[j]] })
	var parts []string
	for i, k := range order {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more kinds", len(order)-4))
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
	}
	return fmt.Sprintf("… %d lines folded, over %s, %s of frames: %s", len(ls), dur(ls[len(ls)-1].t-ls[0].t), size(bytes), strings.Join(parts, ", "))
}

// StateText is a pending request's state in words, as the record's page
// model and the proxy's status file name it: "unseen" says why.
func StateText(state string) string {
	if state == "unseen" {
		return "unseen (detail of its response's stream was lost after it was sent: the response may have passed)"
	}
	return state
}
