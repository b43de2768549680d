package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Kind is the kind of a departure from the record.
type Kind string

// Kinds of departures.
const (
	// Missing: a message the record has did not come within the bound
	// (Patience), or the stream ended first.
	Missing Kind = "missing"
	// Extra: a message came that the record has not.
	Extra Kind = "extra"
	// Different: the message came and differs from the record's (Diff).
	Different Kind = "different"
	// StallNotBlocking: the host stopped reading where the recorded host
	// did, and the server under test did not block writing its stdout, as
	// the recorded one did: it wrote less, or holds what it could not
	// write.
	StallNotBlocking Kind = "stall-not-blocking"
	// Unchecked: the record has only the head of a message, so it could
	// not be sent or compared. Not a failure: Report.Err leaves these out.
	Unchecked Kind = "unchecked"
)

// Departure is one place where a replay departs from the record.
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
func (d Departure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:", d.Kind)
	if d.Seq >= 0 {
		fmt.Fprintf(&b, " seq %d", d.Seq)
	}
	if d.Dir != "" {
		fmt.Fprintf(&b, " (%s)", d.Dir)
	}
	if d.Method != "" {
		fmt.Fprintf(&b, " %s", d.Method)
	}
	if len(d.ID) > 0 {
		fmt.Fprintf(&b, " id=%s", d.ID)
	}
	fmt.Fprintf(&b, ": %s", d.Text)
	if d.Diff != "" {
		fmt.Fprintf(&b, " (-recorded +replayed):\n%s", indent(strings.TrimRight(d.Diff, "\n"), "\t"))
	}
	return b.String()
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// Report is what a replay found: every departure from the record, in the
// order they were found, and what was played and checked.
type Report struct {
	Departures []Departure
	Checked    int           // recorded messages compared with what came, equal or not
	Played     int           // writes made (chunks or messages), as the record cut them
	Elapsed    time.Duration // how long the replay took
	// Notes say where the replay could not do exactly what the record
	// did, and what it did instead (a stall point moved, messages the
	// host's bounds dropped).
	Notes []string
	// Stopped is why the replay ended before the end of the record (its
	// context ended, the other side could not be started or written to);
	// nil when it played the record to the end. The departures are then
	// those found so far: a stopped replay is never "as recorded".
	Stopped error
}

// Count returns how many departures of kind k the report has.
func (r *Report) Count(k Kind) int {
	n := 0
	for _, d := range r.Departures {
		if d.Kind == k {
			n++
		}
	}
	return n
}

// Err returns nil when the replay ran to the end and found no departure
// but Unchecked ones, else an error that lists them (String).
func (r *Report) Err() error {
	if r.Stopped == nil && len(r.Departures) == r.Count(Unchecked) {
		return nil
	}
	return errors.New(r.String())
}

// String summarizes the report on its first line, then lists the
// departures and the notes.
func (r *Report) String() string {
	var b strings.Builder
	n := len(r.Departures) - r.Count(Unchecked)
	var kinds []string
	for _, k := range []Kind{Missing, Extra, Different, StallNotBlocking} {
		if c := r.Count(k); c > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", c, k))
		}
	}
	sep := ";"
	switch {
	case r.Stopped != nil:
		fmt.Fprintf(&b, "replay: stopped before the end of the record (%v): %d departures so far", r.Stopped, n)
		if n > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(kinds, ", "))
		}
	case n == 0:
		b.WriteString("replay: as recorded")
		sep = ":"
	default:
		fmt.Fprintf(&b, "replay: %d departures from the record (%s)", n, strings.Join(kinds, ", "))
	}
	fmt.Fprintf(&b, "%s %d messages checked, %d writes played in %v", sep, r.Checked, r.Played, r.Elapsed.Round(time.Millisecond))
	if c := r.Count(Unchecked); c > 0 {
		fmt.Fprintf(&b, "; %d unchecked (not whole in the record)", c)
	}
	for _, d := range r.Departures {
		b.WriteString("\n  ")
		b.WriteString(strings.ReplaceAll(d.String(), "\n", "\n  "))
	}
	for _, s := range r.Notes {
		b.WriteString("\n  note: " + s)
	}
	return b.String()
}

// maxDiff bounds the diff a departure keeps.
const maxDiff = 8 << 10

// Compare compares got, a message the side under test sent, with want, the
// recorded frame it stands for: both decoded as JSON, without their "id"
// (a replay remaps ids), with the record's redaction (and opts' Redact)
// applied to got, the Ignore paths left out of both, and opts'
// CmpOptions. A value the proxy redacted when it recorded ("[redacted]",
// by its -redact paths or secret-looking keys) matches anything. It returns "" when they agree, else the cmp diff (-recorded
// +got), cut to 8 KiB. checked is false when the record has only want's
// head: nothing is compared. Lines that are not JSON compare as bytes.
func (r *Record) Compare(want *Frame, got []byte, opts ...Option) (diff string, checked bool) {
	if want.Body == nil {
		return "", false
	}
	o, _ := newOptions(opts)
	if o == nil {
		o = &options{}
	}
	got, _ = rewrite(got, append(append([]rule(nil), r.rules...), o.redact...))
	drop := append([]rule{{p: path{"id"}, drop: true}}, o.ignore...)
	w, wok := decode(want.Body, drop)
	g, gok := decode(got, drop)
	if !wok || !gok {
		w, g = string(want.Body), string(got)
	}
	d := cmp.Diff(w, g, append([]cmp.Option{anyForRedacted}, o.cmp...)...)
	if len(d) > maxDiff {
		d = d[:maxDiff] + "\n… (diff cut at 8 KiB)"
	}
	return d, true
}

// redacted is the value the proxy records in place of one it redacted
// (record.Redacted, decoded).
const redacted = "[redacted]"

// anyForRedacted makes a value the proxy redacted before recording match
// whatever comes in its place: the recorded value is not known.
var anyForRedacted = cmp.FilterValues(func(x, y any) bool {
	return x == any(redacted) || y == any(redacted)
}, cmp.Ignore())

// decode decodes a JSON text with the drop rules applied.
func decode(b []byte, drop []rule) (any, bool) {
	b, _ = rewrite(b, drop)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}
