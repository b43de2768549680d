package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/term"
)

// readBaseline reads the report of an earlier "probe -json" of one server.
func readBaseline(path string) (*assertions.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-baseline: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var reps []*assertions.Report
	for {
		var rep assertions.Report
		if err := dec.Decode(&rep); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("-baseline %s: not a report of mcpstdio probe -json: %v", path, err)
		}
		reps = append(reps, &rep)
	}
	if len(reps) != 1 {
		return nil, fmt.Errorf("-baseline %s: holds %d reports, want the -json report of one server", path, len(reps))
	}
	rep := reps[0]
	if len(rep.Results) == 0 {
		return nil, fmt.Errorf("-baseline %s: a report with no results", path)
	}
	for _, res := range rep.Results {
		if res.Name == "" || !slices.Contains(verdictOrder, res.Verdict) {
			return nil, fmt.Errorf("-baseline %s: result %q has verdict %q, want pass, fail, warn or skip", path, res.Name, res.Verdict)
		}
	}
	return rep, nil
}

// change is a criterion whose verdict differs from the baseline's: was is
// "" for a criterion the baseline does not have, now is "" for one this run
// did not report.
type change struct {
	name     string
	was, now assertions.Verdict
}

// worse reports whether the change makes the run worse than the baseline:
// a verdict lower in the order fail < skip < warn < pass (a skip loses what
// was checked; a warning is a SHOULD-level problem or an unverified claim),
// or a new criterion that fails. A criterion not run this time (-run, or
// dropped from the battery) is not worse.
func (c change) worse() bool {
	switch {
	case c.now == "":
		return false
	case c.was == "":
		return c.now == assertions.Fail
	}
	return slices.Index(verdictOrder, c.now) < slices.Index(verdictOrder, c.was)
}

// compareReports lists the criteria whose verdict changed from base to
// cur: cur's order, then the criteria of base that cur lacks.
func compareReports(base, cur *assertions.Report) []change {
	was, now := base.Verdicts(), cur.Verdicts()
	var changes []change
	for _, res := range cur.Results {
		if v, ok := was[res.Name]; !ok || v != res.Verdict {
			changes = append(changes, change{name: res.Name, was: v, now: res.Verdict})
		}
	}
	for _, res := range base.Results {
		if _, ok := now[res.Name]; !ok {
			changes = append(changes, change{name: res.Name, was: res.Verdict})
		}
	}
	return changes
}

// worse counts the changes that make the run worse.
func worse(changes []change) int {
	n := 0
	for _, c := range changes {
		if c.worse() {
			n++
		}
	}
	return n
}

// changes prints the comparison with the baseline: a count line and one
// line per changed criterion.
func (p *printer) changes(base, cur *assertions.Report, changes []change) {
	fmt.Fprintln(p.w)
	if !slices.Equal(base.Command, cur.Command) {
		fmt.Fprintf(p.w, "(the baseline is a report of another command: %s)\n", term.Line(base.Subject))
	}
	unchanged := len(cur.Results)
	for _, c := range changes {
		if c.now != "" {
			unchanged--
		}
	}
	n := worse(changes)
	verdict := "nothing got worse"
	if n > 0 {
		verdict = fmt.Sprintf("%d got worse", n)
	}
	fmt.Fprintf(p.w, "Against the baseline: %s (%d changed, %d unchanged).\n", verdict, len(changes), unchanged)
	for _, c := range changes {
		kind := "better"
		switch {
		case c.worse():
			kind = "WORSE"
		case c.now == "":
			kind = "not run"
		case c.was == "":
			kind = "new"
		}
		fmt.Fprintf(p.w, "  %-7s %-28s %s\n", kind, term.Line(c.name), term.Line(changeText(c)))
	}
}

func changeText(c change) string {
	switch {
	case c.now == "":
		return "was " + strings.ToUpper(string(c.was))
	case c.was == "":
		return strings.ToUpper(string(c.now)) + " (not in the baseline)"
	}
	return strings.ToUpper(string(c.was)) + " -> " + strings.ToUpper(string(c.now))
}
