package proxy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/human"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// addBlocked adds dur to d's blocked time in m.
func addBlocked(m *record.Metrics, d dirIndex, dur time.Duration) {
	switch d {
	case dIn:
		m.BlockedInUS += dur.Microseconds()
	case dOut:
		m.BlockedOutUS += dur.Microseconds()
	case dErr:
		m.BlockedErrUS += dur.Microseconds()
	}
}

// dur and size format for people (internal/human).
var dur, size = human.Duration, human.Size

// name describes a request: "id 7 (tools/call search)".
func (r *request) name() string {
	s := "id " + string(r.id) + " (" + r.method
	if r.tool != "" {
		s += " " + r.tool
	}
	return s + ")"
}

// blockedWrite returns how long direction d's write has been in progress
// at now, and its bytes; 0 when no write is in progress.
func (o *observer) blockedWrite(d dirIndex, now time.Time) (time.Duration, int64) {
	ws := o.dirs[d].fw.writeStart.Load()
	if ws == 0 {
		return 0, 0
	}
	return now.Sub(o.start.Add(time.Duration(ws - 1))), o.dirs[d].fw.writeLen.Load()
}

// liveVerdicts finds what is stuck now. o.mu is held.
func (o *observer) liveVerdicts(now time.Time) []record.Verdict {
	vs := o.lostDetail() // at the top: what the rest cannot see
	vs = append(vs, o.faultsHolding(now)...)
	if b, n := o.blockedWrite(dOut, now); b >= o.cfg.Stuck {
		vs = append(vs, o.hostNotReading(now, b, n))
	}
	if b, n := o.blockedWrite(dIn, now); b >= o.cfg.Stuck {
		vs = append(vs, o.serverNotReading(now, b, n))
	}
	if b, n := o.blockedWrite(dErr, now); b >= o.cfg.Stuck {
		vs = append(vs, record.Verdict{Kind: record.VerdictStderrBlocked, Text: fmt.Sprintf(
			"server blocked writing stderr, which the host does not read: writing %s of it to the host has been blocked for %s%s",
			size(n), dur(b), o.pipeNote(dErr))})
	}
	vs = append(vs, o.unanswered(now)...)
	vs = append(vs, o.cancelVerdicts(now)...)
	if !o.toolCall && now.Sub(o.start) >= o.cfg.Unanswered {
		vs = append(vs, o.noToolCall(now))
	}
	if v, ok := o.idle(now); ok {
		vs = append(vs, v)
	}
	if !o.stdinEOF.IsZero() && o.exit == nil && now.Sub(o.stdinEOF) >= o.cfg.Stuck {
		vs = append(vs, record.Verdict{Kind: record.VerdictNoExit, Text: fmt.Sprintf("the host closed the server's stdin %s ago; the server has not exited", dur(now.Sub(o.stdinEOF)))})
	}
	vs = append(vs, o.countVerdicts()...)
	return vs
}

// pipeNote says what the kernel pipes hold around direction d, where the
// system reports it (Linux).
func (o *observer) pipeNote(d dirIndex) string {
	var parts []string
	fw := o.dirs[d].fw
	if n, ok := pipeBuffered(fw.src); ok {
		parts = append(parts, fmt.Sprintf("%s more waiting in %s pipe", size(int64(n)), srcNames[d]))
	}
	if n, ok := pipeBuffered(fw.dst); ok {
		parts = append(parts, fmt.Sprintf("%s unread in %s pipe", size(int64(n)), dstNames[d]))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

func (o *observer) hostNotReading(now time.Time, b time.Duration, n int64) record.Verdict {
	v := record.Verdict{Kind: record.VerdictHostNotReading}
	what := fmt.Sprintf("%s of the server's output", size(n))
	if id, method, sz, ok := o.dirs[dOut].fa.current(); ok && len(id) > 0 && method == "" {
		v.ID = id
		if r := o.pending[pkey{dIn, wire.Key(id)}]; r != nil {
			what = fmt.Sprintf("the response to %s, %s of it read from the server so far,", r.name(), size(sz))
		} else {
			what = fmt.Sprintf("a response to id %s, %s of it read from the server so far,", id, size(sz))
		}
	} else if ok && method != "" {
		what = fmt.Sprintf("a %s message, %s of it read from the server so far,", method, size(sz))
	} else if r := o.responding(); r != nil {
		v.ID = r.id
		what = fmt.Sprintf("the response to %s (%s, read whole from the server)", r.name(), size(r.respSize))
	}
	held := fmt.Sprintf("the proxy holds %s of it in a blocked write", size(n))
	if o.dirs[dOut].fw.splicing.Load() {
		held = fmt.Sprintf("a splice of %s of it from the server's pipe is blocked (the proxy holds none)", size(n))
	}
	v.Text = fmt.Sprintf("host is not reading the server's output: %s is waiting for %s; %s%s",
		what, dur(b), held, o.pipeNote(dOut))
	return v
}

// responding returns a request whose response was read and not yet
// delivered, the oldest.
func (o *observer) responding() *request {
	var best *request
	for _, r := range o.pending {
		if r.d == dIn && !r.respRead.IsZero() && r.delivered.IsZero() && (best == nil || r.respRead.Before(best.respRead)) {
			best = r
		}
	}
	return best
}

func (o *observer) serverNotReading(now time.Time, b time.Duration, n int64) record.Verdict {
	var unwritten []string
	for _, r := range o.sortedPending() {
		if r.d == dIn && r.written.IsZero() {
			unwritten = append(unwritten, r.name())
		}
	}
	if id, method, sz, ok := o.dirs[dIn].fa.current(); ok && len(id) > 0 && method != "" {
		// A request whose newline has not arrived: the host is still
		// writing it, or the proxy has not read all of it.
		unwritten = append(unwritten, fmt.Sprintf("id %s (%s, %s of it read from the host so far)", id, method, size(sz)))
	}
	text := fmt.Sprintf("server is not reading its stdin for %s: a write of %s to it is blocked", dur(b), size(n))
	if len(unwritten) > 0 {
		text += fmt.Sprintf(" (%d %s unwritten: %s)", len(unwritten), plural(len(unwritten), "request", "requests"), strings.Join(first(unwritten, 3), ", "))
	}
	return record.Verdict{Kind: record.VerdictServerNotReading, Text: text + o.pipeNote(dIn)}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func first(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

func (o *observer) sortedPending() []*request {
	rs := make([]*request, 0, len(o.pending))
	for _, r := range o.pending {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].seq < rs[j].seq })
	return rs
}

// lostSince reports whether the observer lost detail of the stream r's
// response comes on since r was written: the response may have been in
// it, and a verdict would claim what was not observed (the lost detail is
// a verdict of its own).
func (o *observer) lostSince(r *request) bool {
	d := o.respDir(r)
	return d.gapAt.After(r.written) || d.fa.active && d.fa.gap
}

// respDir is the direction r's response comes on.
func (o *observer) respDir(r *request) *dirObs {
	if r.d == dOut {
		return o.dirs[dIn]
	}
	return o.dirs[dOut]
}

// unanswered finds requests written long ago with no response begun, of
// those whose response the observer cannot have missed.
func (o *observer) unanswered(now time.Time) []record.Verdict {
	var vs []record.Verdict
	for _, r := range o.sortedPending() {
		if r.written.IsZero() || !r.respStart.IsZero() || !r.cancelFwd.IsZero() || now.Sub(r.written) < o.cfg.Unanswered || o.lostSince(r) || o.responseUnderway(r) {
			continue
		}
		age := dur(now.Sub(r.written))
		if r.d == dOut {
			vs = append(vs, record.Verdict{Kind: record.VerdictUnanswered, ID: r.id, Text: fmt.Sprintf("host has not answered the server's request %s for %s", r.name(), age)})
			continue
		}
		reads := o.stdinReading(r, now)
		out := "its stdout is idle"
		if eof := o.dirs[dOut].eof; !eof.IsZero() {
			out = fmt.Sprintf("it closed its stdout %s ago and runs on", dur(now.Sub(eof)))
		} else if held := o.heldOutput(); held != "" {
			out = held
		} else if last := o.dirs[dOut].lastByte; last.IsZero() {
			out = "it has written nothing on stdout"
		} else if idle := now.Sub(last); idle >= o.cfg.Stuck {
			out = fmt.Sprintf("its stdout is idle (last byte %s ago)", dur(idle))
		} else {
			out = "its stdout is busy with other messages"
		}
		if r.progress > 0 {
			out += fmt.Sprintf("; %d progress notifications for it so far", r.progress)
		}
		vs = append(vs, record.Verdict{Kind: record.VerdictUnanswered, ID: r.id, Text: fmt.Sprintf("server has not answered %s for %s; %s; %s", r.name(), age, reads, out)})
	}
	return vs
}

// responseUnderway reports whether r's response is the line being read
// now: its first bytes have come, its newline not yet.
func (o *observer) responseUnderway(r *request) bool {
	id, method, _, ok := o.respDir(r).fa.current()
	return ok && method == "" && len(id) > 0 && wire.Key(id) == wire.Key(r.id)
}

// exitedOpen finds the requests of the host's that the server ended
// without answering: those whose response the observer could not have
// missed, and, apart, those whose response may have passed unseen (it
// lost detail of the server's output since they were written).
func (o *observer) exitedOpen() (record.Verdict, bool) {
	var open, unseen []string
	for _, r := range o.sortedPending() {
		if r.d != dIn || !r.respStart.IsZero() || !r.cancelFwd.IsZero() {
			continue
		}
		if o.lostSince(r) {
			unseen = append(unseen, r.name())
		} else {
			open = append(open, r.name())
		}
	}
	var parts []string
	if len(open) > 0 {
		n := fmt.Sprintf("%d %s", len(open), plural(len(open), "request", "requests"))
		if o.forgottenOpen > 0 {
			n = "at least " + n
		}
		parts = append(parts, fmt.Sprintf("with %s unanswered: %s", n, strings.Join(first(open, 5), ", ")))
	}
	if n := o.forgottenOpen; n > 0 {
		// The table forgot them unanswered: whether an answer came after
		// is not known (one would be counted as a response to an unknown
		// id), so they are not counted as unanswered, nor left out.
		more := ""
		if len(open)+len(unseen) > 0 {
			more = " more"
		}
		parts = append(parts, fmt.Sprintf("with %d%s %s unanswered when the proxy's bounded pending table (%d entries) forgot %s (whether %s answered later is not known)",
			n, more, plural(int(n), "request that was", "requests that were"), o.cfg.MaxPending, plural(int(n), "it", "them"), plural(int(n), "it was", "they were")))
	}
	if len(unseen) > 0 {
		parts = append(parts, fmt.Sprintf("with %d %s whose response may have passed unseen (the observer lost detail of its output): %s",
			len(unseen), plural(len(unseen), "request", "requests"), strings.Join(first(unseen, 5), ", ")))
	}
	if len(parts) == 0 {
		return record.Verdict{}, false
	}
	return record.Verdict{Kind: record.VerdictExited, Text: fmt.Sprintf("the server ended (%s) %s", o.exit.Text, strings.Join(parts, "; and "))}, true
}

// stdinReading says what is known of whether the server reads its stdin,
// for a verdict about request r, which was written to it: only bytes
// written after r and taken since are evidence that it reads; bytes that
// wait in its stdin pipe (Linux) are evidence that it does not; with
// neither, it is unknown.
func (o *observer) stdinReading(r *request, now time.Time) string {
	fw := o.dirs[dIn].fw
	if b, _ := o.blockedWrite(dIn, now); b >= o.cfg.Stuck {
		return fmt.Sprintf("it has not read its stdin for %s", dur(b))
	}
	if fw.written.Load() < fw.read.Load() {
		return "a write to its stdin is in progress"
	}
	last := o.dirs[dIn].lastWrite
	unread, ok := pipeBuffered(fw.dst)
	// Bytes after the request were written to the server (offsets say so
	// when no fault changes what goes in; times, when one does).
	since := last.After(r.written)
	if fw.f == nil {
		since = fw.delivered.Load() > r.end
	}
	switch {
	case ok && unread > 0:
		text := fmt.Sprintf("%s written to its stdin wait unread in its pipe", size(int64(unread)))
		if fw.f == nil && fw.delivered.Load()-int64(unread) < r.end {
			text = fmt.Sprintf("it has not read the request: it is among the %s written to its stdin that wait unread in its pipe", size(int64(unread)))
		}
		if !last.IsZero() {
			text += fmt.Sprintf(" (the last written %s ago)", dur(now.Sub(last)))
		}
		return text
	case ok && since:
		return fmt.Sprintf("it reads stdin (it took all written to it since, the last %s ago)", dur(now.Sub(last)))
	case ok:
		return "whether it reads stdin now is unknown: nothing was written to it since"
	case since:
		return "whether it read what was written to its stdin since is unknown (no pipe levels on this system)"
	}
	return "whether it reads stdin now is unknown: nothing was written to it since"
}

// cancelVerdicts reports requests whose cancel was forwarded and that still
// got progress or a response after it.
func (o *observer) cancelVerdicts(now time.Time) []record.Verdict {
	var vs []record.Verdict
	for _, r := range o.sortedPending() {
		if r.cancelFwd.IsZero() {
			continue
		}
		if r.afterCancel > 0 || r.late {
			vs = append(vs, cancelVerdict(o, r, now))
		}
	}
	return vs
}

func cancelVerdict(o *observer, r *request, now time.Time) record.Verdict {
	at := dur(r.cancelFwd.Sub(o.start))
	text := fmt.Sprintf("cancel for %s forwarded to the server at %s", r.name(), at)
	var what []string
	if r.afterCancel > 0 {
		what = append(what, fmt.Sprintf("the server went on sending progress for %s (%d %s)", dur(r.lastProgress.Sub(r.cancelFwd)), r.afterCancel, plural(r.afterCancel, "notification", "notifications")))
	}
	if r.late {
		what = append(what, fmt.Sprintf("its response (%s) began %s after the cancel", size(r.respSize), dur(r.respStart.Sub(r.cancelFwd))))
	}
	return record.Verdict{Kind: record.VerdictCancelIgnored, ID: r.id, Text: text + "; " + strings.Join(what, "; ")}
}

func (o *observer) noToolCall(now time.Time) record.Verdict {
	sent := "nothing"
	if len(o.hostSent) > 0 {
		sent = strings.Join(o.hostSent, ", ")
	}
	return record.Verdict{Kind: record.VerdictNoToolCall, Text: fmt.Sprintf("host never sent tools/call in %s (it sent: %s)", dur(now.Sub(o.start)), sent)}
}

// idle finds the case where the server is done and the host is not: no
// request pending, no write blocked, and the last response delivered long
// ago with nothing from the host since.
func (o *observer) idle(now time.Time) (record.Verdict, bool) {
	if len(o.recent) == 0 || o.exit != nil {
		return record.Verdict{}, false
	}
	for _, r := range o.pending {
		if r.cancelFwd.IsZero() {
			return record.Verdict{}, false
		}
	}
	for d := range o.dirs {
		if b, _ := o.blockedWrite(dirIndex(d), now); b > 0 {
			return record.Verdict{}, false
		}
	}
	r := o.recent[len(o.recent)-1]
	if r.d != dIn || now.Sub(r.delivered) < o.cfg.Unanswered || o.lastHost.After(r.delivered) {
		return record.Verdict{}, false
	}
	return record.Verdict{Kind: record.VerdictIdle, ID: r.id, Text: fmt.Sprintf(
		"nothing is waiting in the proxy: the last response (%s, %s) was delivered to the host %s ago, %s after the request was read, and the host has sent nothing since",
		r.name(), size(r.respSize), dur(now.Sub(r.delivered)), dur(r.delivered.Sub(r.read)))}, true
}

// countVerdicts turns counters into findings.
func (o *observer) countVerdicts() []record.Verdict {
	var vs []record.Verdict
	if n := o.m.UnknownResponses; n > 0 {
		vs = append(vs, record.Verdict{Kind: record.VerdictUnknownResponse, ID: o.m.FirstUnknown, Text: fmt.Sprintf(
			"the server sent %d %s to ids the host had not sent or that were already answered%s (first: id %s)", n, plural(int(n), "response", "responses"), o.forgotNote(), o.m.FirstUnknown)})
	}
	if n := o.m.ParseErrors; n > 0 {
		vs = append(vs, record.Verdict{Kind: record.VerdictJunk, Text: fmt.Sprintf("the server wrote %d %s on stdout that %s not JSON-RPC (first: %q)", n, plural(int(n), "line", "lines"), plural(int(n), "is", "are"), trimText(o.m.FirstJunk, 80))})
	}
	if n := o.m.HostUnknownResponses; n > 0 {
		vs = append(vs, record.Verdict{Kind: record.VerdictUnknownResponse, ID: o.m.FirstHostUnknown, Text: fmt.Sprintf(
			"the host sent %d %s to ids the server had not sent or that were already answered%s (first: id %s)", n, plural(int(n), "response", "responses"), o.forgotNote(), o.m.FirstHostUnknown)})
	}
	return vs
}

// forgotNote qualifies a count of responses to unknown ids when the
// pending table forgot requests: a response to one of them is counted
// there too.
func (o *observer) forgotNote() string {
	if o.m.Forgotten == 0 {
		return ""
	}
	return fmt.Sprintf(", or that the proxy's bounded pending table had forgotten (%d)", o.m.Forgotten)
}

func trimText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return string(trimRune([]byte(s[:n]))) + "…"
}

// finalVerdicts are the verdicts at the end of the session. o.mu is held.
func (o *observer) finalVerdicts(now time.Time) []record.Verdict {
	vs := o.liveVerdicts(now)
	for d, do := range o.dirs {
		if do.longest < o.cfg.Stuck {
			continue
		}
		var who string
		switch dirIndex(d) {
		case dOut:
			who = "the host did not read the server's stdout"
		case dIn:
			who = "the server did not read its stdin"
		case dErr:
			who = "the host did not read the server's stderr"
		}
		vs = append(vs, record.Verdict{Kind: record.VerdictBlockedEarlier, Text: fmt.Sprintf("%s for %s at most (a write of %s blocked from %s; %s blocked in all)",
			who, dur(do.longest), size(do.longestN), dur(do.longestAt.Sub(o.start)), dur(do.blocked))})
	}
	vs = append(vs, o.verdicts...)
	if o.exit != nil {
		if v, ok := o.exitedOpen(); ok {
			vs = append(vs, v)
		}
	}
	// One verdict per kind and id: a later one replaces an earlier one.
	out := vs[:0]
	seen := map[string]int{}
	for _, v := range vs {
		k := v.Kind + " " + string(v.ID)
		if i, ok := seen[k]; ok {
			out[i] = v
			continue
		}
		seen[k] = len(out)
		out = append(out, v)
	}
	return out
}
