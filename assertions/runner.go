package assertions

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// fixture is what one criterion runs against, made fresh for it: the
// runner's watchdog diagnoses and aborts it, and the runner always closes
// it.
type fixture interface {
	// diagnose describes what the fixture's session looks like now.
	diagnose() string
	// abort ends the server so that whatever the criterion waits on fails.
	abort()
	// close ends what the criterion started and says whether the server
	// had to be forced to end, and how.
	close() (forced string, err error)
}

// criterion is one named check of a battery.
type criterion[F fixture] struct {
	name string
	run  func(ctx context.Context, f F) Result
}

// battery is a list of criteria with what every run of it shares.
type battery[F fixture] struct {
	subject  string
	criteria []criterion[F]
	fixture  func(name string) F
	// start, if set, runs before the criteria: a failure it returns
	// (named "start") is the battery's only result; a pass goes to
	// progress only.
	start  func(ctx context.Context) Result
	budget func(name string) time.Duration // the watchdog's budget for one criterion
	run    *regexp.Regexp
	expect map[string]Verdict
	rules  map[string]string // a criterion's rule, for a verdict that names none
}

// names lists the battery's criteria in the order they run.
func (b *battery[F]) names() []string {
	var names []string
	for _, c := range b.criteria {
		names = append(names, c.name)
	}
	return names
}

// checkExpect reports an Expect that names no criterion of the battery.
func (b *battery[F]) checkExpect() error {
	var unknown []string
	for name := range b.expect {
		if !slices.Contains(b.names(), name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("Expect names no criterion of this battery: %q (the criteria: %s)", unknown, strings.Join(b.names(), ", "))
}

// selected returns the criteria Run selects.
func (b *battery[F]) selected() []criterion[F] {
	var out []criterion[F]
	for _, c := range b.criteria {
		if b.run == nil || b.run.MatchString(c.name) {
			out = append(out, c)
		}
	}
	return out
}

// all runs every selected criterion in order and returns the report;
// progress, if set, gets each result as soon as it is known.
func (b *battery[F]) all(ctx context.Context, progress func(Result)) *Report {
	start := time.Now()
	rep := &Report{Subject: b.subject}
	if err := b.checkExpect(); err != nil {
		rep.Results = append(rep.Results, Result{Name: "expect", Verdict: Fail, Evidence: err.Error()})
	}
	if b.start != nil && len(b.selected()) > 0 {
		res := b.start(ctx)
		res.Name, res.Duration = "start", time.Since(start)
		if progress != nil {
			progress(res)
		}
		if res.Verdict == Fail {
			rep.Results = append(rep.Results, res)
			rep.Duration = time.Since(start)
			return rep
		}
	}
	forced := ""
	for _, c := range b.selected() {
		if ctx.Err() != nil {
			break
		}
		var res Result
		res, forced = b.one(ctx, c, forced)
		rep.Results = append(rep.Results, res)
		if progress != nil {
			progress(res)
		}
	}
	rep.Duration = time.Since(start)
	return rep
}

// tests runs every selected criterion as a named subtest of t.
func (b *battery[F]) tests(t *testing.T) {
	t.Helper()
	if err := b.checkExpect(); err != nil {
		t.Fatal(err)
	}
	if b.start != nil && len(b.selected()) > 0 {
		ctx, cancel, _ := bound.Context(context.Background(), t)
		res := b.start(ctx)
		cancel()
		if res.Verdict == Fail {
			res.Name = "start"
			t.Run("start", func(t *testing.T) { t.Helper(); report(t, res) })
			return
		}
	}
	forced := ""
	begin := time.Now()
	rep := &Report{Subject: b.subject}
	for _, c := range b.selected() {
		t.Run(c.name, func(t *testing.T) {
			t.Helper()
			ctx, cancel, _ := bound.Context(context.Background(), t)
			defer cancel()
			var res Result
			res, forced = b.one(ctx, c, forced)
			rep.Results = append(rep.Results, res)
			report(t, res)
		})
	}
	rep.Duration = time.Since(begin)
	t.Log(rep.Summary())
}

// one runs criterion c against a fresh fixture under the watchdog, and
// always closes the fixture; a server that had to be forced to end is said
// on this criterion's line. after says how the previous criterion's server
// was killed, if it was (SIGKILL, or not even then), which this verdict
// then mentions: a server killed that way may have left state (a lock
// file) that changes this one.
func (b *battery[F]) one(ctx context.Context, c criterion[F], after string) (res Result, forced string) {
	start := time.Now()
	f := b.fixture(c.name)
	budget := b.budget(c.name)
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	done := make(chan Result, 1)
	go func() { done <- runRecovered(cctx, c, f) }()
	select {
	case res = <-done:
	case <-cctx.Done():
		diag := f.diagnose()
		f.abort()
		// Every step inside is bounded by cctx, which has ended, and the
		// server is gone; a criterion that still does not return is stuck
		// in something else (a Target or a host that ignores its context).
		if !bound.Wait(doneSignal(done, &res), 10*time.Second) {
			diag += "\nthe criterion itself did not return after the server was ended: its goroutine is left running"
		}
		if err := ctx.Err(); err != nil {
			res = Result{Verdict: Fail, Evidence: fmt.Sprintf("interrupted by the caller (%v)", err), Details: diag}
		} else {
			res = Result{Verdict: Fail, Evidence: fmt.Sprintf("the criterion did not finish within its budget of %v: the watchdog ended the server", budget), Details: diag}
		}
	}
	forced, err := f.close()
	var left leftBehind
	if he := (*harnessError)(nil); errors.As(err, &he) {
		// The verdict rests on what the harness could not record.
		was := fmt.Sprintf("without it, the criterion said: %s: %s", res.Verdict, res.Evidence)
		res = failErr(ruleRecord, "not checked", err)
		res.Details = strings.TrimSpace(res.Details + "\n" + was)
	} else if errors.As(err, &left) {
		res.Evidence += " [" + left.Error() + "]"
	} else if err != nil && res.Verdict != Fail {
		res.Details = strings.TrimSpace(res.Details + "\nclosing: " + err.Error())
	}
	if forced != "" {
		res.Evidence += " [at the end of this criterion, " + forced + "]"
	}
	if after != "" {
		res.Evidence += fmt.Sprintf(" [the previous criterion's server was killed (%s): it may have left state behind]", after)
	}
	if !strings.Contains(forced, "killed by SIGKILL") && !strings.Contains(forced, "did not end even after") {
		forced = "" // the next criterion is told only of a kill, which can leave state
	}
	res.Name = c.name
	res.Evidence = boundLines(res.Evidence, evidenceLine)
	if res.Rule == "" {
		res.Rule = b.rules[c.name]
	}
	res.Duration = time.Since(start)
	if v, ok := b.expect[c.name]; ok {
		res.Expected = v
	}
	return res, forced
}

// evidenceLine bounds each line of a verdict's evidence, in bytes: what
// informs is kept (tool calls by name and argument size, JSON-RPC errors by
// code and message, an isError result's first text), what only repeats is
// cut from the middle.
const evidenceLine = 1024

// boundLines cuts each line of s longer than n bytes to its head and tail.
func boundLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = boundText(l, n)
	}
	return strings.Join(lines, "\n")
}

// boundText cuts s, if longer than n bytes, to its first 3/4 and last 1/4
// around a note of what was cut (at UTF-8 boundaries).
func boundText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail > 0 && !utf8.RuneStart(s[len(s)-tail]) {
		tail--
	}
	return fmt.Sprintf("%s … (%d bytes cut) … %s", s[:head], len(s)-head-tail, s[len(s)-tail:])
}

// doneSignal returns a channel closed once done delivers, storing the
// result.
func doneSignal(done <-chan Result, res *Result) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		*res = <-done
		close(ch)
	}()
	return ch
}

// runRecovered runs a criterion, turning a panic in it (or in the code it
// calls: a Target, a host adapter) into a failed verdict with the stack.
func runRecovered[F fixture](ctx context.Context, c criterion[F], f F) (res Result) {
	defer func() {
		if v := recover(); v != nil {
			res = Result{Verdict: Fail, Evidence: fmt.Sprintf("panic: %v", v), Details: stack()}
		}
	}()
	return c.run(ctx, f)
}

// report turns a result into the test's outcome. Its lines point at the
// caller's test, not at this package.
func report(t testing.TB, res Result) {
	t.Helper()
	msg := res.Evidence
	if res.Rule != "" {
		msg += "\nrule: " + res.Rule
	}
	if res.Details != "" {
		msg += "\n" + res.Details
	}
	name := res.Name
	if name == "" {
		name = "check"
	}
	switch err := res.Err(); {
	case err != nil && res.Expected != "" && res.Expected != res.Verdict:
		t.Errorf("%s: %s, but Expect says %s: update Expect\n%s", name, res.Verdict, res.Expected, msg)
	case err != nil:
		t.Errorf("%s: %s", name, msg)
	case res.Verdict == Skip:
		t.Skipf("%s: %s", name, msg)
	case res.Verdict != Pass && res.Expected == res.Verdict:
		t.Logf("%s: %s (as Expect says): %s", name, strings.ToUpper(string(res.Verdict)), msg)
	case res.Verdict == Warn:
		// go test has no warning outcome: the log line and the battery's
		// closing summary say it.
		t.Logf("WARN %s: %s", name, msg)
	default:
		t.Logf("%s: %s", name, res.Evidence)
	}
}

// Results are built with these.

func pass(format string, args ...any) Result {
	return Result{Verdict: Pass, Evidence: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) Result {
	return Result{Verdict: Skip, Evidence: fmt.Sprintf(format, args...)}
}

func fail(rule, format string, args ...any) Result {
	return Result{Verdict: Fail, Rule: rule, Evidence: fmt.Sprintf(format, args...)}
}

// failErr makes a failing result from err: what failed, then the error's
// first line as evidence and the rest (a diagnosis) as details. An err that
// is a deadline is a bound that ran out (see unseenBound).
func failErr(rule, what string, err error) Result {
	first, rest, _ := strings.Cut(err.Error(), "\n")
	return Result{Verdict: Fail, Rule: rule, Evidence: what + ": " + first, Details: rest, bound: errors.Is(err, context.DeadlineExceeded)}
}

// unseenBound turns a failure that rests only on a bound into a warning
// where the server's threads cannot be seen (an in-process server, or no
// /proc here): without them, a server slow under the race detector or a
// loaded machine and one that stopped look the same, and the bound is the
// harness's, not the server's fault.
func unseenBound(res Result, seen bool) Result {
	if res.Verdict == Fail && res.bound && !seen {
		res.Verdict = Warn
		res.Evidence = "unverified (the server's threads cannot be seen here: in-process, or no /proc; a bound that ran out is not a failure): " + res.Evidence
	}
	return res
}
