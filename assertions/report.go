package assertions

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Verdict is the outcome of one criterion.
type Verdict string

// Verdicts. Warn is for SHOULD-level rules (the behaviour is allowed by the
// specification but is known to cause trouble) and for a check that could
// not be verified; its evidence says which.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Warn Verdict = "warn"
	Skip Verdict = "skip"
)

// Result is the outcome of one criterion, or of one Check… call.
type Result struct {
	Name     string        // stable name, as matched by Run; empty for a Check… call
	Verdict  Verdict       // pass, fail, warn or skip
	Expected Verdict       // the verdict the configuration's Expect names, if it names one
	Evidence string        // one line: what was seen, with numbers taken when it was seen
	Rule     string        // the rule checked, with the spec revision when it depends on it
	Details  string        // the full evidence and the session's diagnosis, when useful
	Duration time.Duration // how long the criterion took
	Era      string        // the protocol revision the session negotiated

	bound bool // the failure rests on a bound that ran out, not on evidence of the server (see unseenBound)
}

// Err returns nil when the result is acceptable, and otherwise an error
// prefixed with the criterion's name ("check" for a Check… call) saying
// why: a failure Expect does not name, or a verdict other than the one
// Expect names — even a failure that now passes, which must be updated so
// that stale expectations surface ("update Expect"). A warning or a skip
// is acceptable.
func (r Result) Err() error {
	name := r.Name
	if name == "" {
		name = "check"
	}
	switch {
	case r.Unexpected():
		return fmt.Errorf("%s: %s, but Expect says %s: update Expect (%s)", name, r.Verdict, r.Expected, r.Evidence)
	case r.Verdict == Fail && r.Expected != Fail:
		return fmt.Errorf("%s: %s", name, r.Evidence)
	}
	return nil
}

// Line formats the result as one line: verdict, name, duration, evidence.
// A verdict other than Expect's leads the evidence with "expected fail,
// got pass: update Expect".
func (r Result) Line() string {
	v := strings.ToUpper(string(r.Verdict))
	if r.Expected != "" && r.Expected == r.Verdict && r.Verdict != Pass {
		v += "*" // as expected
	}
	evidence := r.Evidence
	if r.Unexpected() {
		evidence = fmt.Sprintf("expected %s, got %s: update Expect; %s", r.Expected, r.Verdict, evidence)
	}
	return fmt.Sprintf("  %-5s %-28s %8v  %s", v, r.Name, r.Duration.Round(time.Millisecond), evidence)
}

// Unexpected reports whether Expect names a verdict for the result and
// the result has another one, even a pass: the expectation is stale and
// fails the run (see Err).
func (r Result) Unexpected() bool { return r.Expected != "" && r.Verdict != r.Expected }

// resultJSON is a Result as JSON: durations in milliseconds.
type resultJSON struct {
	Name       string  `json:"name"`
	Verdict    Verdict `json:"verdict"`
	Expected   Verdict `json:"expected,omitempty"`
	Evidence   string  `json:"evidence"`
	Rule       string  `json:"rule,omitempty"`
	Details    string  `json:"details,omitempty"`
	DurationMs float64 `json:"duration_ms"`
	Protocol   string  `json:"protocol,omitempty"`
}

// MarshalJSON encodes the result with its duration in milliseconds.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{r.Name, r.Verdict, r.Expected, r.Evidence, r.Rule, r.Details, ms(r.Duration), r.Era})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (r *Result) UnmarshalJSON(b []byte) error {
	var j resultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Result{Name: j.Name, Verdict: j.Verdict, Expected: j.Expected, Evidence: j.Evidence, Rule: j.Rule, Details: j.Details, Duration: fromMs(j.DurationMs), Era: j.Protocol}
	return nil
}

func ms(d time.Duration) float64     { return float64(d.Microseconds()) / 1000 }
func fromMs(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// Report lists every criterion of a battery run with its verdict.
type Report struct {
	Subject  string   // what was checked, in words
	Command  []string // the server's command line, when the subject is one
	Results  []Result
	Duration time.Duration
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

// Err returns nil if every result is acceptable (see Result.Err), and
// otherwise one error listing every one that is not.
func (r *Report) Err() error {
	var errs []error
	for _, res := range r.Results {
		if err := res.Err(); err != nil {
			errs = append(errs, err)
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
	b.WriteString(r.Summary())
	b.WriteByte('\n')
	return b.String()
}

// Summary is one line of counts: "9 passed, 1 failed, 1 warned (era), 1
// skipped in 3.5s", naming the warned criteria and counting the expected
// ones; verdicts other than Expect's are counted apart from the criteria:
// "; 1 expectation failed (eof-drains-pending): update Expect".
func (r *Report) Summary() string {
	s := r.counts()
	if names := r.unexpected(); len(names) > 0 {
		s += fmt.Sprintf("; %d expectation%s failed (%s): update Expect", len(names), plural(len(names)), strings.Join(names, ", "))
	}
	return s
}

// unexpected names the results whose verdict is not Expect's.
func (r *Report) unexpected() []string {
	var names []string
	for _, res := range r.Results {
		if res.Unexpected() {
			names = append(names, res.Name)
		}
	}
	return names
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// counts is Summary without the expectations that failed.
func (r *Report) counts() string {
	warned := ""
	var names []string
	for _, res := range r.Results {
		if res.Verdict == Warn {
			names = append(names, res.Name)
		}
	}
	if len(names) > 0 {
		warned = " (" + strings.Join(names, ", ") + ")"
	}
	s := fmt.Sprintf("%d passed, %d failed, %d warned%s, %d skipped in %v",
		r.Count(Pass), r.Count(Fail), r.Count(Warn), warned, r.Count(Skip), r.Duration.Round(time.Millisecond))
	expected := 0
	for _, res := range r.Results {
		if res.Expected != "" && res.Expected == res.Verdict && res.Verdict != Pass {
			expected++
		}
	}
	if expected > 0 {
		s += fmt.Sprintf(" (%d as expected, marked *)", expected)
	}
	return s
}

// reportJSON is a Report as JSON: a summary first, durations in
// milliseconds.
type reportJSON struct {
	Subject    string         `json:"subject"`
	Command    []string       `json:"command,omitempty"`
	Passed     bool           `json:"passed"`
	Counts     map[string]int `json:"counts"`
	DurationMs float64        `json:"duration_ms"`
	Results    []Result       `json:"results"`
}

// MarshalJSON encodes the report with a summary: passed (Err is nil) and
// the count of each verdict.
func (r *Report) MarshalJSON() ([]byte, error) {
	counts := map[string]int{}
	for _, v := range []Verdict{Pass, Fail, Warn, Skip} {
		counts[string(v)] = r.Count(v)
	}
	results := r.Results
	if results == nil {
		results = []Result{}
	}
	return json.Marshal(reportJSON{r.Subject, r.Command, r.Err() == nil, counts, ms(r.Duration), results})
}

// UnmarshalJSON decodes what MarshalJSON encodes (the summary is derived,
// and not read back).
func (r *Report) UnmarshalJSON(b []byte) error {
	var j reportJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Report{Subject: j.Subject, Command: j.Command, Results: j.Results, Duration: fromMs(j.DurationMs)}
	return nil
}
