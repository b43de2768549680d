package assertions

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Verdict is the outcome of one criterion.
type Verdict string

// Verdicts. Warn is for SHOULD-level rules: the behaviour is allowed by the
// specification but is known to cause trouble.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Warn Verdict = "warn"
	Skip Verdict = "skip"
)

// Result is the outcome of one criterion of a battery.
type Result struct {
	Name     string        `json:"name"`               // stable name, as matched by -run
	Verdict  Verdict       `json:"verdict"`            // pass, fail, warn or skip
	Evidence string        `json:"evidence"`           // one line: what was seen
	Rule     string        `json:"rule,omitempty"`     // the rule checked, with the spec revision when it depends on it
	Details  string        `json:"details,omitempty"`  // full evidence and the session's diagnosis, when useful
	Duration time.Duration `json:"duration_ns"`        // how long the criterion took
	Era      string        `json:"protocol,omitempty"` // protocol revision the session negotiated
}

// Report lists every criterion of a battery run with its verdict.
type Report struct {
	Subject  string        `json:"subject"` // what was checked: a command line or a target name
	Results  []Result      `json:"results"`
	Duration time.Duration `json:"duration_ns"`
}

// Count returns how many results have verdict v.
func (r *Report) Count(v Verdict) int {
	n := 0
	for _, res := range r.Results {
		if res.Verdict == v {
			n++
		}
	}
	return n
}

// Verdicts maps each criterion's name to its verdict, a compact form for
// comparing a run with what is expected.
func (r *Report) Verdicts() map[string]Verdict {
	m := make(map[string]Verdict, len(r.Results))
	for _, res := range r.Results {
		m[res.Name] = res.Verdict
	}
	return m
}

// Err returns nil if no criterion failed, and otherwise one error listing
// every failure, each as "name: evidence".
func (r *Report) Err() error {
	var errs []error
	for _, res := range r.Results {
		if res.Verdict == Fail {
			errs = append(errs, fmt.Errorf("%s: %s", res.Name, res.Evidence))
		}
	}
	return errors.Join(errs...)
}

// String formats the report as one line per criterion and a summary line.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Subject)
	for _, res := range r.Results {
		b.WriteString(res.Line())
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "%d passed, %d failed, %d warned, %d skipped in %v\n",
		r.Count(Pass), r.Count(Fail), r.Count(Warn), r.Count(Skip), r.Duration.Round(time.Millisecond))
	return b.String()
}

// Line formats the result as one line: verdict, name, duration, evidence.
func (res Result) Line() string {
	return fmt.Sprintf("  %-4s  %-28s %8v  %s", strings.ToUpper(string(res.Verdict)), res.Name, res.Duration.Round(time.Millisecond), res.Evidence)
}
