package page

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/record"
)

// ProxyState says whether the proxy that writes a record still runs, as
// the caller can tell (the status file, the process): it decides how a
// record without a summary is described. Such a record's proxy was killed
// (a host that ends its tools with SIGKILL, an OOM killer), or it still
// runs; what the summary would have said is worked out in this file, once,
// from the events, for the terminal, the HTML report and the live page.
type ProxyState string

const (
	ProxyUnknown ProxyState = ""        // cannot tell
	ProxyRunning ProxyState = "running" // it still runs: the record is still being written
	ProxyGone    ProxyState = "gone"    // it no longer runs: it ended before it could finish the record
)

// SetProxyState says whether the record's proxy still runs, and so how a
// record without a summary ends (Unended). It changes nothing for a
// record with a summary.
func (s *Session) SetProxyState(p ProxyState) {
	s.ProxyState = p
	s.Unended = s.unendedText()
}

// ProxyStateOf tells whether the proxy that wrote s, the record at path,
// still runs: its process (the header's pid) holds the file open, or no
// such process runs. A process of that pid that does not hold it (another
// process since, or the proxy writing the record elsewhere), one that
// cannot be looked at (another user's), or a system without /proc leaves
// it unknown.
func (s *Session) ProxyStateOf(path string) ProxyState {
	if s.Header == nil {
		return ProxyUnknown
	}
	return proxyStateOf(path, s.Header.PID)
}

func proxyStateOf(path string, pid int) ProxyState {
	fi, err := os.Stat(path)
	if pid <= 0 || err != nil {
		return ProxyUnknown
	}
	open, known := proc.HasOpen(pid, fi)
	switch {
	case !known:
		return ProxyUnknown
	case open:
		return ProxyRunning
	}
	if id, ok := proc.Identify(pid); ok && id.Running() {
		return ProxyUnknown
	}
	return ProxyGone
}

// liveVerdict is a verdict as the proxy wrote it while the session ran:
// its words hold then (T), not at the record's end.
type liveVerdict struct {
	T int64
	V record.Verdict
}

// maxLive is how many live verdicts a Session keeps; more are counted in
// liveMore (the proxy writes one per kind and request: an unanswered
// flood writes one per request).
const maxLive = 1000

func (s *Session) liveVerdict(t int64, v record.Verdict) {
	k := v.Kind + " " + string(v.ID)
	if s.seen[k] {
		return
	}
	s.seen[k] = true
	if v.Kind == record.VerdictUnanswered {
		return // told from the pending requests at the end
	}
	if len(s.live) >= maxLive {
		s.liveMore++
		return
	}
	s.live = append(s.live, liveVerdict{t, v})
}

// unendedText says where a record without a summary ends, by the record's
// clock and the wall clock, and why as far as ProxyState tells.
func (s *Session) unendedText() string {
	if s.Summary {
		return ""
	}
	t := "the record ends at " + at(s.End)
	pid := ""
	if h := s.Header; h != nil {
		if start, err := time.Parse("2006-01-02 15:04:05.000 UTC", h.Start); err == nil && start.Year() > 1970 { // a header without its start gives year 1
			t += " (" + start.Add(time.Duration(s.End)*time.Microsecond).Format("2006-01-02 15:04:05.000 UTC") + ")"
		}
		pid = fmt.Sprintf(" (pid %d)", h.PID)
	}
	t += " without the proxy's summary"
	if c := s.cut; c != nil {
		t += ": writing it failed at " + at(c.T) + " (" + c.Err + "; " + itoa(c.Events) + " events lost with that write), and the proxy went on forwarding, unrecorded"
		switch s.ProxyState {
		case ProxyRunning:
			t += "; the proxy" + pid + " is still running"
		case ProxyGone:
			t += "; the proxy" + pid + " has ended since"
		}
		return t + "; metrics and verdicts are worked out from the events up to the cut"
	}
	switch s.ProxyState {
	case ProxyRunning:
		t += ": the proxy" + pid + " is still running (it holds the record open)"
	case ProxyGone:
		t += ": the proxy" + pid + " is gone: it was killed (or died) before it could finish the record"
	default:
		t += ": the proxy was killed, or is still running"
	}
	if s.lastSig != "" {
		t += "; its last event is a signal: " + s.lastSig
	}
	return t + "; metrics and verdicts are worked out from the events up to that point"
}

// headlines are what a blocked direction means, as the proxy's verdicts
// say it.
var headlines = map[string]struct{ kind, now, before string }{
	record.DirOut: {record.VerdictHostNotReading, "host is not reading the server's output", "the host did not read the server's stdout"},
	record.DirIn:  {record.VerdictServerNotReading, "server is not reading its stdin", "the server did not read its stdin"},
	record.DirErr: {record.VerdictStderrBlocked, "server blocked writing stderr, which the host does not read", "the host did not read the server's stderr"},
}

// stuckUS is how long a blocked write or a stall must last to be a
// verdict: the proxy's default -stuck (the record does not say its own).
const stuckUS = 1_000_000

// unansweredUS is the proxy's default -unanswered.
const unansweredUS = 10_000_000

// maxUnansweredVerdicts is how many unanswered requests are named one by
// one; the rest are counted in one verdict.
const maxUnansweredVerdicts = 5

// unendedVerdicts are the verdicts of a record without a summary at its
// end: a write still blocked and a stall still in effect, each with how
// long it has lasted by End, and the words of the live verdict the proxy
// wrote about it (as of then); the longest blocked write of each direction
// that ended; the requests unanswered at the end; the other live verdicts
// as the proxy wrote them, with their time.
func (s *Session) unendedVerdicts() []record.Verdict {
	var vs []record.Verdict
	used := make([]bool, len(s.live))
	// seenText returns the words of the first live verdict of kind written
	// while the span [since, end] lasted, after its headline.
	seenText := func(kind string, since, end int64) (string, record.Verdict) {
		for i, l := range s.live {
			if !used[i] && l.V.Kind == kind && l.T >= since && l.T <= end {
				used[i] = true
				rest := l.V.Text
				if _, after, ok := strings.Cut(rest, ": "); ok {
					rest = after
				}
				return "; at " + at(l.T) + " the proxy saw: " + rest, l.V
			}
		}
		return "", record.Verdict{}
	}
	for i, l := range s.live {
		if l.V.Kind == record.VerdictDropped {
			used[i] = true
			vs = append(vs, record.Verdict{Kind: l.V.Kind, Text: fmt.Sprintf("%s; as of %s (metrics: %s and %d events in all)", l.V.Text, at(l.T), size(s.counts.m.DroppedBytes), s.counts.m.DroppedEvents)})
		}
	}
	for _, b := range s.Blocks {
		if b.Kind == "block" || b.End != 0 || s.End-b.Since < stuckUS {
			continue
		}
		text := fmt.Sprintf("the proxy's fault %s:%s has held %s for %s at least, still when the record ends (from %s)", b.Dir, b.Kind, srcName(b.Dir), dur(s.End-b.Since), at(b.Since))
		seen, _ := seenText(record.VerdictFaultHolding, b.Since, s.End)
		vs = append(vs, record.Verdict{Kind: record.VerdictFaultHolding, Text: text + seen})
	}
	for _, dir := range []string{record.DirOut, record.DirIn, record.DirErr} {
		h := headlines[dir]
		for _, b := range s.Blocks {
			if b.Kind != "block" || b.Dir != dir || b.End != 0 || s.End-b.Since < stuckUS {
				continue
			}
			text := fmt.Sprintf("%s for %s at least, still when the record ends (a write of %s to %s blocked from %s)", h.now, dur(s.End-b.Since), size(b.N), destName(dir), at(b.Since))
			seen, lv := seenText(h.kind, b.Since, s.End)
			vs = append(vs, record.Verdict{Kind: h.kind, ID: lv.ID, Text: text + seen})
		}
	}
	vs = append(vs, s.unanswered()...)
	var rest []record.Verdict
	for i, l := range s.live {
		if used[i] {
			continue
		}
		if h, ok := kindDir(l.V.Kind); ok && s.endedBlockAt(h, l.T) {
			continue // a write that ended: the longest of its direction is told below
		}
		if l.V.Kind == record.VerdictFaultHolding && !s.stallAt(l.T) {
			continue
		}
		rest = append(rest, record.Verdict{Kind: l.V.Kind, ID: l.V.ID, Text: "at " + at(l.T) + ": " + l.V.Text})
	}
	vs = append(vs, rest...)
	if s.liveMore > 0 {
		vs = append(vs, record.Verdict{Kind: "more", Text: fmt.Sprintf("and %d more verdicts the proxy wrote while it ran (see the timeline)", s.liveMore)})
	}
	for _, dir := range []string{record.DirOut, record.DirIn, record.DirErr} {
		l := s.counts.longest[dirIndex(dir)]
		if l.End-l.Since < stuckUS {
			continue
		}
		var all int64
		switch dir {
		case record.DirIn:
			all = s.counts.m.BlockedInUS
		case record.DirOut:
			all = s.counts.m.BlockedOutUS
		default:
			all = s.counts.m.BlockedErrUS
		}
		vs = append(vs, record.Verdict{Kind: record.VerdictBlockedEarlier, Text: fmt.Sprintf("%s for %s at most (a write of %s blocked from %s; %s blocked in all, writes that ended)",
			headlines[dir].before, dur(l.End-l.Since), size(l.N), at(l.Since), dur(all))})
	}
	if v, ok := s.exitedUnanswered(); ok {
		vs = append(vs, v)
	}
	return vs
}

// kindDir returns the direction a blocked-write verdict kind is about.
func kindDir(kind string) (string, bool) {
	for d, h := range headlines {
		if h.kind == kind {
			return d, true
		}
	}
	return "", false
}

// endedBlockAt reports whether a blocked write of dir that ended was in
// progress at t.
func (s *Session) endedBlockAt(dir string, t int64) bool {
	for _, b := range s.Blocks {
		if b.Kind == "block" && b.Dir == dir && b.End != 0 && b.Since <= t && t <= b.End {
			return true
		}
	}
	return false
}

// stallAt reports whether a stall still in effect at the end began by t.
func (s *Session) stallAt(t int64) bool {
	for _, b := range s.Blocks {
		if b.Kind != "block" && b.End == 0 && b.Since <= t {
			return true
		}
	}
	return false
}

// unanswered are the verdicts about requests written at least the
// proxy's default -unanswered before the record ends and with no
// response begun nor cancel read: the first few by name, the rest
// counted.
func (s *Session) unanswered() []record.Verdict {
	var server, host []Request
	for _, r := range s.Pending {
		if r.State != "waiting" || r.Cancel > 0 || r.Written == 0 && s.hasChunks(r.Dir) || s.End-r.Sent < unansweredUS {
			continue
		}
		if r.Dir == record.DirIn {
			server = append(server, r)
		} else {
			host = append(host, r)
		}
	}
	var vs []record.Verdict
	for _, g := range []struct {
		rs  []Request
		who string
	}{{server, "server has not answered"}, {host, "host has not answered the server's request"}} {
		sort.SliceStable(g.rs, func(i, j int) bool { return g.rs[i].Sent < g.rs[j].Sent })
		for i, r := range g.rs {
			if i == maxUnansweredVerdicts {
				vs = append(vs, record.Verdict{Kind: record.VerdictUnanswered, Text: fmt.Sprintf("%s %d more requests, sent from %s to %s (see pending at the end)", g.who, len(g.rs)-i, at(r.Sent), at(g.rs[len(g.rs)-1].Sent))})
				break
			}
			vs = append(vs, record.Verdict{Kind: record.VerdictUnanswered, ID: r.ID, Text: fmt.Sprintf("%s %s for %s at least, still when the record ends (sent at %s)", g.who, describe(r.ID, r.Method, r.Tool), dur(s.End-r.Sent), at(r.Sent))})
		}
	}
	return vs
}

// exitedUnanswered is the verdict about a server that ended with requests
// of the host's unanswered (no response begun, no cancel).
func (s *Session) exitedUnanswered() (record.Verdict, bool) {
	if len(s.Endings) == 0 {
		return record.Verdict{}, false
	}
	var open []string
	n := 0
	for _, r := range s.Pending {
		if r.Dir == record.DirIn && r.Response < 0 && r.RespRead == 0 && r.Cancel == 0 {
			if n++; n <= 5 {
				open = append(open, describe(r.ID, r.Method, r.Tool))
			}
		}
	}
	if n == 0 {
		return record.Verdict{}, false
	}
	if n > 5 {
		open = append(open, fmt.Sprintf("and %d more", n-5))
	}
	return record.Verdict{Kind: record.VerdictExited, Text: fmt.Sprintf("the server ended (%s) with %d %s unanswered: %s",
		s.Endings[len(s.Endings)-1], n, plural(n, "request", "requests"), strings.Join(open, ", "))}, true
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// srcName is the source a fault of dir stops reading.
func srcName(d string) string {
	switch d {
	case record.DirIn:
		return "the host's output to the server (the server's stdin)"
	case record.DirOut:
		return "the server's stdout"
	case record.DirErr:
		return "the server's stderr"
	}
	return d
}
