package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// The proxy's faults (record.Fault) in a record. A stop on the server's
// stdout is the proxy not reading it, as a host that stops reading does:
// the host player plays it as a stall of its reads, at the exact byte, for
// as long as it held. The others act on what passed between the two sides
// or on the server process, not on what the host did; the host player
// says why it does not play each one that fired (Report.Unplayed), and
// Serve, which plays the server's output, plays none.

// faultStalls adds a stall of the host's reads for each stop fault on the
// server's stdout that fired: from its start event (whose text begins
// "stopped") to its next event, or to last, the record's last time.
func (r *Record) faultStalls(last time.Duration) {
	open := map[record.Fault]int{} // a stop that fired → its stall
	for _, e := range r.Events {
		if e.Ev != record.EvFault || e.Fault == nil || !stopsHostReads(*e.Fault) {
			continue
		}
		if k, ok := open[*e.Fault]; ok {
			st := &r.Stalls[k]
			st.Seq, st.Dur, st.Ended = e.Seq, max(us(e.T)-st.Since, 0), true
			delete(open, *e.Fault)
			continue
		}
		if !strings.HasPrefix(e.Text, "stopped") {
			continue
		}
		open[*e.Fault] = len(r.Stalls)
		t := us(e.T)
		r.Stalls = append(r.Stalls, Stall{
			Seq: e.Seq, Dir: record.DirOut, Since: t, Dur: max(last-t, 0),
			Fault: e.Fault.String(), At: r.wrote(record.DirOut, t),
		})
	}
}

// stopsHostReads reports whether f is the proxy not reading the server's
// stdout.
func stopsHostReads(f record.Fault) bool {
	return f.Kind == "stop" && f.Dir == record.DirOut
}

// mergeFaultStalls takes each other stall of stdout that overlaps a fault's
// into the fault's: the replay has one reader, which stops at the first of
// the two points, from the first start to the last end.
func (r *Record) mergeFaultStalls() {
	kept := r.Stalls[:0]
	var merged []Stall
	for _, st := range r.Stalls {
		if st.Fault == "" && st.Dir == record.DirOut {
			merged = append(merged, st)
			continue
		}
		kept = append(kept, st)
	}
	for _, st := range merged {
		into := -1
		for k := range kept {
			if f := &kept[k]; f.Fault != "" && st.Since <= f.Since+f.Dur && f.Since <= st.Since+st.Dur {
				into = k
				break
			}
		}
		if into < 0 {
			kept = append(kept, st)
			continue
		}
		f := &kept[into]
		end := max(f.Since+f.Dur, st.Since+st.Dur)
		f.Since = min(f.Since, st.Since)
		f.Dur, f.At = end-f.Since, min(f.At, st.At)
		f.Ended = f.Ended && st.Ended
	}
	r.Stalls = kept
}

// unplayedFaults returns the faults that fired in the record and that the
// host player does not play, each with why.
func (r *Record) unplayedFaults() []Unplayed {
	var out []Unplayed
	seen := map[record.Fault]bool{}
	for _, e := range r.Events {
		if e.Ev != record.EvFault || e.Fault == nil || seen[*e.Fault] {
			continue
		}
		f := *e.Fault
		seen[f] = true
		if why := faultNotPlayed(f); why != "" {
			out = append(out, Unplayed{Seq: e.Seq, What: "fault", Why: fmt.Sprintf("%s: %s", f, why)})
		}
	}
	return out
}

// faultNotPlayed says why the host player does not play fault f, or ""
// when it does, or when the server under test could not tell the
// difference.
func faultNotPlayed(f record.Fault) string {
	switch {
	case stopsHostReads(f):
		return ""
	case f.Kind == "stop" && f.Dir == record.DirIn:
		// The host's writes waited for the proxy; the record has them
		// when the proxy read them, which is when the replay sends them.
		return ""
	case f.Kind == "sigstop":
		return "it stopped the server process itself, not the host; the server under test runs on"
	case f.Kind == "stop":
		return "the replay host reads the server's stderr all the time"
	case f.Dir == record.DirOut && (f.Kind == "drop" || f.Kind == "duplicate" || f.Kind == "withhold-cancel"):
		return "" // what the host saw, not what the server did
	case f.Dir == record.DirIn:
		return "it changed what the server got from the host; the replay sends what the host wrote, as the record has it"
	case f.Kind == "truncate" || f.Kind == "close":
		return "it closed the host's side; the replay reads the server's output to its end"
	}
	return "it slowed the proxy's writes: the replay host reads at full speed (a write of the proxy that blocked is played as a stall)"
}
