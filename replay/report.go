package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/term"
)

// Kind is the kind of a departure from the record.
type Kind string

// Kinds of departures.
const (
	// Missing: a message the record has did not come within the bound
	// (Patience) and the server then stopped by the one rule without
	// sending it (mcptest.Activity: the evidence is in Text), or ended, or
	// the stream ended first; where the server's threads cannot be seen
	// (an in-process server), the bound alone decides.
	Missing Kind = "missing"
	// Extra: a message came that the record has not.
	Extra Kind = "extra"
	// Different: the message came and differs from the record's (Diff).
	Different Kind = "different"
	// StallNotBlocking: a reader stopped where the recorded one did (the
	// host reading stdout; Serve, stdin) and the side under test did not
	// block writing as the recorded one did: it wrote less, or holds what
	// it could not write.
	StallNotBlocking Kind = "stall-not-blocking"
	// Unchecked: the record has only the head of a message, so it could
	// not be sent or compared; or the proxy's observer lost detail there
	// (Frame.Gap); or a recorded message had not come when the replay's
	// bound (30 s) ran out while the server was still busy by the one rule
	// (its output arriving, CPU demand, a process it started at work: slow,
	// not missing); or the server was still busy after its stdin
	// closed when that bound ran out, so its exit is unverified. Not a
	// failure: Report.Err leaves these out.
	Unchecked Kind = "unchecked"
)

// Departure is one place where a replay departs from the record: what
// Serve reports of the host under test, and Host of the server under test
// under Same.
type Departure struct {
	Kind Kind
	// Seq is the record event the departure is about (the recorded
	// frame, or the stall's event); -1 for an extra message.
	Seq    int64
	Dir    string          // the message's stream (record.DirIn, DirOut)
	Method string          // the message's method, or its request's for a response
	ID     json.RawMessage // the recorded id, if any
	Text   string          // what happened, in words, with the evidence
	Diff   string          // for Different: the cmp diff (-recorded +replayed)
}

// String formats the departure on one line, the diff indented below it.
// What came from the record or the server (method, id, text, diff) is
// shown with its control characters escaped, so that it can neither drive
// a terminal nor start a line of its own.
func (d Departure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", d.Kind)
	if d.Seq >= 0 {
		fmt.Fprintf(&b, " seq %d", d.Seq)
	}
	if d.Dir != "" {
		fmt.Fprintf(&b, " (%s)", term.Line(d.Dir))
	}
	if d.Method != "" {
		fmt.Fprintf(&b, " %s", term.Line(d.Method))
	}
	if len(d.ID) > 0 {
		fmt.Fprintf(&b, " id=%s", term.Line(string(d.ID)))
	}
	fmt.Fprintf(&b, ": %s", term.Line(d.Text))
	if d.Diff != "" {
		fmt.Fprintf(&b, " (-recorded +replayed):\n%s", indent(term.Block(strings.TrimRight(d.Diff, "\n")), "\t"))
	}
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// StallOutcome is what a replay did with a recorded stall.
type StallOutcome string

// Outcomes of a recorded stall.
const (
	// StallVerified: the reader stopped where the recorded one did, and
	// before the recorded side's next action the other side reached the
	// state it had in the record: blocked writing, or it had written what
	// the recorded one had by then.
	StallVerified StallOutcome = "verified"
	// StallMoved: the reader had to stop elsewhere (MovedBy bytes on) to
	// get the messages the recorded reader had: the other side wrote other
	// output first; the state was not checked at the recorded point.
	StallMoved StallOutcome = "moved"
	// StallUnverifiable: played, but the state could not be seen: the
	// system shows neither pipe levels nor blocked threads (off Linux), or
	// Serve's stdin is not a pipe file, or the server was still busy
	// (working, not stopped) when the replay's watch of 30 s ran out
	// (Text says which).
	StallUnverifiable StallOutcome = "unverifiable"
	// StallNotReached: the other side never reached the recorded state
	// within the bound and was not busy getting there (it stopped short of
	// it, by mcptest's stopped-or-slow rule): the StallNotBlocking
	// departure.
	StallNotReached StallOutcome = "not-blocking"
	// StallSkipped: not played (the replay stopped first; Text says why).
	StallSkipped StallOutcome = "skipped"
)

// StallCheck is what a replay did with one recorded stall.
type StallCheck struct {
	Seq     int64  // the stall's record event
	Dir     string // the stream whose reader stopped
	At      int64  // the stream byte where the recorded reader stopped
	Outcome StallOutcome
	MovedBy int64  // for StallMoved: how many bytes past At the reader stopped
	Text    string // what was seen, or why it was not
}

// String formats the check on one line.
func (c StallCheck) String() string {
	return fmt.Sprintf("stall seq %d (%s) at byte %d: %s: %s", c.Seq, term.Line(c.Dir), c.At, c.Outcome, term.Line(c.Text))
}

// Report is what a replay found: the rules' findings (Host, by default),
// or every departure from the record in the order they were found (Same,
// and Serve), what was done with each recorded stall, what was not played,
// and what was played and checked.
type Report struct {
	Departures []Departure
	Stalls     []StallCheck  // one per recorded stall of the reader played (Host: stdout; Serve: stdin), in record order
	Checked    int           // recorded messages compared with what came, equal or not
	Played     int           // writes made (chunks or messages), as the record cut them
	Elapsed    time.Duration // how long the replay took
	// Notes say where the replay could not do exactly what the record
	// did, and what it did instead (messages the host's bounds dropped,
	// a record cut short).
	Notes []string
	// Stopped is why the replay ended before the end of the record (its
	// context ended, the other side could not be started or written to);
	// nil when it played the record to the end. The departures are then
	// those found so far: a stopped replay is never "as recorded".
	Stopped error
	// Findings are the rules' judgements (by default; none under Same),
	// in the order they were made.
	Findings []Finding
	// Unplayed lists what the record holds that the replay did not play
	// (a request the record has only the head of, a fault of the proxy),
	// and why; the first line counts them.
	Unplayed []Unplayed
	// ExtraDropped counts the Extra departures left out of Departures:
	// a report keeps the latest 100 of them, so that a side that sends
	// message after message the record has not grows neither the
	// replay's memory nor the report. The first line counts them all.
	ExtraDropped int

	extras    int  // Extra departures in Departures
	rules     bool // judged by the rules (not Same)
	requests  int  // requests sent
	answered  int  // of those not cancelled, answered
	cancels   int  // requests cancelled
	strict    bool // Strict: what was not checked fails too
	headsOnly bool // the record was made without -log-bodies
}

// maxExtra is how many Extra departures a Report keeps, the latest.
const maxExtra = 100

// add adds a departure, keeping at most about twice maxExtra Extra ones
// meanwhile (the oldest dropped maxExtra at a time, counted), so that each
// add costs O(1) on the whole; trim brings them to maxExtra at the end.
func (r *Report) add(d Departure) {
	r.Departures = append(r.Departures, d)
	if d.Kind != Extra {
		return
	}
	if r.extras++; r.extras >= 2*maxExtra {
		r.dropExtras(r.extras - maxExtra)
	}
}

// trim keeps the latest maxExtra Extra departures, counting the rest.
func (r *Report) trim() {
	if r.extras > maxExtra {
		r.dropExtras(r.extras - maxExtra)
	}
}

// dropExtras drops the n oldest Extra departures, counting them.
func (r *Report) dropExtras(n int) {
	kept := r.Departures[:0]
	for _, d := range r.Departures {
		if d.Kind == Extra && n > 0 {
			n--
			r.extras--
			r.ExtraDropped++
			continue
		}
		kept = append(kept, d)
	}
	clear(r.Departures[len(kept):])
	r.Departures = kept
}

// Count returns how many departures of kind k the report has.
func (r *Report) Count(k Kind) int {
	return countOf(r.Departures, func(d Departure) bool { return d.Kind == k })
}

// Unverified returns how many recorded stalls were not verified.
func (r *Report) Unverified() int {
	return countOf(r.Stalls, func(c StallCheck) bool { return c.Outcome != StallVerified })
}

// countOf returns how many of xs satisfy f.
func countOf[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

// verdicts returns how many findings have verdict v.
func (r *Report) verdicts(v Verdict) int {
	return countOf(r.Findings, func(f Finding) bool { return f.Verdict == v })
}

// skipped returns how many recorded stalls were not played.
func (r *Report) skipped() int {
	return countOf(r.Stalls, func(c StallCheck) bool { return c.Outcome == StallSkipped })
}

// Complete reports whether the replay played and judged everything the
// record has: it ran to the end, and nothing was left unplayed. By the
// rules, no finding is Unverified and every stall was played; under Same,
// every message was compared and every stall verified.
func (r *Report) Complete() bool {
	if r.Stopped != nil || len(r.Unplayed) > 0 {
		return false
	}
	if r.rules {
		return r.verdicts(Unverified) == 0 && r.skipped() == 0
	}
	return r.Count(Unchecked) == 0 && r.Unverified() == 0
}

// Err returns nil when the replay ran to the end and, by the rules, no
// finding failed (under Same: found no departure but Unchecked ones),
// else an error whose text is String. Under Strict, it also fails when
// the replay was not Complete: a finding unverified, something not
// played, a message it could not compare, a stall it could not verify.
func (r *Report) Err() error {
	ok := r.Stopped == nil
	if r.rules {
		ok = ok && r.verdicts(Fail) == 0
	} else {
		ok = ok && len(r.Departures) == r.Count(Unchecked)
	}
	if ok && (!r.strict || r.Complete()) {
		return nil
	}
	return errors.New(r.String())
}

// String summarizes the report on its first line — which never claims
// more than was checked — then lists the departures, the stalls and the
// notes.
func (r *Report) String() string {
	var b strings.Builder
	if r.rules {
		b.WriteString(r.rulesHeadline())
	} else {
		b.WriteString(r.headline())
	}
	for _, f := range r.Findings {
		b.WriteString("\n  " + f.String())
	}
	for _, u := range r.Unplayed {
		b.WriteString("\n  " + u.String())
	}
	if r.ExtraDropped > 0 {
		fmt.Fprintf(&b, "\n  … %d earlier extra messages not listed (the latest %d are)", r.ExtraDropped, r.Count(Extra))
	}
	for _, d := range r.Departures {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(d.String(), "\n", "\n  "))
	}
	for _, c := range r.Stalls {
		b.WriteString("\n  " + c.String())
	}
	for _, s := range r.Notes {
		b.WriteString("\n  note: " + s)
	}
	return b.String()
}

// headline is String's first line.
func (r *Report) headline() string {
	var b strings.Builder
	n := len(r.Departures) - r.Count(Unchecked)
	var kinds []string
	n += r.ExtraDropped
	for _, k := range []Kind{Missing, Extra, Different, StallNotBlocking} {
		c := r.Count(k)
		if k == Extra {
			c += r.ExtraDropped
		}
		if c > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", c, k))
		}
	}
	unchecked := r.Count(Unchecked)
	var gaps []string // what was not checked
	if u := r.Unverified() - r.Count(StallNotBlocking); u > 0 {
		gaps = append(gaps, fmt.Sprintf("%d of %d stalls unverified", u, len(r.Stalls)))
	}
	if unchecked > 0 {
		gaps = append(gaps, fmt.Sprintf("%d messages only as heads", unchecked))
	}
	if u := len(r.Unplayed); u > 0 {
		gaps = append(gaps, fmt.Sprintf("%d not played (%s)", u, r.unplayedKinds()))
	}
	switch {
	case r.Stopped != nil:
		fmt.Fprintf(&b, "replay: stopped before the end of the record (%v): %d departures so far", r.Stopped, n)
		if n > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(kinds, ", "))
		}
		b.WriteString(";")
	case n > 0:
		fmt.Fprintf(&b, "replay: %d departures from the record (%s);", n, strings.Join(kinds, ", "))
	case r.Checked == 0 && unchecked > 0 && r.headsOnly:
		fmt.Fprintf(&b, "replay: nothing checked: the record has only the heads of %d messages (record with mcpstdio proxy -log-bodies to check them);", unchecked)
	case len(gaps) > 0:
		fmt.Fprintf(&b, "replay: as recorded for what could be checked: %s;", strings.Join(gaps, ", "))
	default:
		b.WriteString("replay: as recorded:")
	}
	fmt.Fprintf(&b, " %d messages checked", r.Checked)
	if len(r.Stalls) > 0 {
		fmt.Fprintf(&b, ", %d of %d stalls verified", len(r.Stalls)-r.Unverified(), len(r.Stalls))
	}
	fmt.Fprintf(&b, ", %d writes played in %v", r.Played, r.Elapsed.Round(time.Millisecond))
	if unchecked > 0 && (n > 0 || r.Stopped != nil) {
		fmt.Fprintf(&b, "; %d unchecked (not whole in the record)", unchecked)
	}
	return b.String()
}

// rulesHeadline is String's first line when the replay judged by the
// rules: the first failure (else the first unverified finding, else the
// first warning) with its rule and place in the record, what was judged
// and played, then its evidence.
func (r *Report) rulesHeadline() string {
	var b strings.Builder
	var lead *Finding
	for _, v := range []Verdict{Fail, Unverified, Warn} {
		if i := slices.IndexFunc(r.Findings, func(f Finding) bool { return f.Verdict == v }); i >= 0 {
			lead = &r.Findings[i]
			break
		}
	}
	b.WriteString("replay: ")
	switch {
	case r.Stopped != nil:
		fmt.Fprintf(&b, "stopped before the end of the record (%v)", r.Stopped)
	case lead != nil && lead.Verdict == Fail:
		fmt.Fprintf(&b, "FAIL %s at seq %d (+%v)", lead.Rule, lead.Seq, lead.T.Round(time.Millisecond))
	case len(r.Findings) == 0:
		b.WriteString("nothing judged")
		if r.requests == 0 && len(r.Unplayed) > 0 && r.headsOnly {
			b.WriteString(": the record has only the heads of the host's messages (record with mcpstdio proxy -log-bodies)")
		}
	case r.strict && !r.Complete():
		b.WriteString("FAIL under Strict: not everything was played and judged")
	default:
		b.WriteString("PASS by the rules")
	}
	var counts []string
	for _, v := range []Verdict{Fail, Unverified, Warn, Pass} {
		if n := r.verdicts(v); n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, v))
		}
	}
	played := fmt.Sprintf("played %s (%d of the %d not cancelled answered), %s", plural(r.requests, "request"), r.answered, r.requests-r.cancels, plural(r.cancels, "cancel"))
	if len(r.Stalls) > 0 {
		played += fmt.Sprintf(", %d of %s", len(r.Stalls)-r.skipped(), plural(len(r.Stalls), "stall"))
	}
	played += fmt.Sprintf(", %d writes in %v", r.Played, r.Elapsed.Round(time.Millisecond))
	b.WriteString(" [")
	if len(counts) > 0 {
		b.WriteString(strings.Join(counts, ", ") + "; ")
	}
	b.WriteString(played)
	if n := len(r.Unplayed) + r.skipped(); n > 0 {
		kinds := r.unplayedKinds()
		if k := r.skipped(); k > 0 {
			kinds = strings.TrimPrefix(kinds+", "+plural(k, "stall"), ", ")
		}
		fmt.Fprintf(&b, "; not played: %s", kinds)
	}
	b.WriteString("]")
	if lead != nil && r.Stopped == nil {
		if lead.Verdict == Fail {
			b.WriteString(": " + term.Line(lead.Text))
		} else {
			b.WriteString(": " + lead.String())
		}
	}
	return b.String()
}

// unplayedKinds counts Unplayed by what: "1 fault, 2 requests".
func (r *Report) unplayedKinds() string {
	var order []string
	n := map[string]int{}
	for _, u := range r.Unplayed {
		if n[u.What] == 0 {
			order = append(order, u.What)
		}
		n[u.What]++
	}
	var parts []string
	for _, w := range order {
		parts = append(parts, plural(n[w], w))
	}
	return strings.Join(parts, ", ")
}

// plural returns "1 stall", "2 stalls".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
