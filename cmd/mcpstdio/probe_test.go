package main

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// jsonReports parses probe -json's stdout: one report per line.
func jsonReports(t *testing.T, stdout string) []assertions.Report {
	t.Helper()
	var reps []assertions.Report
	for _, line := range strings.SplitAfter(stdout, "\n") {
		if line == "" {
			continue
		}
		if !strings.HasSuffix(line, "\n") {
			t.Errorf("stdout does not end with a newline: %q", line)
		}
		var rep assertions.Report
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatalf("stdout line is not a JSON report: %v\n%s", err, line)
		}
		reps = append(reps, rep)
	}
	return reps
}

// passedField reads the "passed" summary of a JSON report line.
func passedField(t *testing.T, line string) bool {
	t.Helper()
	var s struct {
		Passed *bool `json:"passed"`
	}
	if err := json.Unmarshal([]byte(line), &s); err != nil || s.Passed == nil {
		t.Fatalf("no passed field in %s (%v)", line, err)
	}
	return *s.Passed
}

// TestProbeDemoJSON checks the built-in demo's JSON: the same shape as for
// a server, one report per fake, each holding the fake's expected verdicts,
// so that it passes when the fake behaved as expected.
func TestProbeDemoJSON(t *testing.T) {
	t.Parallel()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	res := mcpstdio(t, time.Minute, "probe", "-json", "-junit", junit, "-within", "1s", "-run", "^(stdout-clean|reads-while-blocked)$")
	if res.code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", res.code, res.stderr)
	}
	reps := jsonReports(t, res.stdout)
	if len(reps) != 2 {
		t.Fatalf("%d reports on stdout, want 2 (good and naive fake):\n%s", len(reps), res.stdout)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	for i, args := range [][]string{{binary, "fake"}, {binary, "fake", "-naive"}} {
		if diff := cmp.Diff(args, reps[i].Command); diff != "" {
			t.Errorf("report %d command mismatch (-want +got):\n%s", i, diff)
		}
		if !passedField(t, lines[i]) || reps[i].Err() != nil {
			t.Errorf("report of %q: not passed (%v), want passed: the fake behaved as expected", args, reps[i].Err())
		}
	}
	wantV := map[string]assertions.Verdict{"stdout-clean": assertions.Pass, "reads-while-blocked": assertions.Pass}
	if diff := cmp.Diff(wantV, reps[0].Verdicts()); diff != "" {
		t.Errorf("good fake verdicts mismatch (-want +got):\n%s", diff)
	}
	wantV["reads-while-blocked"] = assertions.Fail
	if diff := cmp.Diff(wantV, reps[1].Verdicts()); diff != "" {
		t.Errorf("naive fake verdicts mismatch (-want +got):\n%s", diff)
	}
	for _, r := range reps[1].Results {
		if r.Expected != r.Verdict {
			t.Errorf("naive fake %s: verdict %s, expected %q: want the fake's expectation in the report", r.Name, r.Verdict, r.Expected)
		}
	}
	// The people's output went to stderr.
	if !strings.Contains(res.stderr, "As expected") || !strings.Contains(res.stderr, "FAIL* reads-while-blocked") {
		t.Errorf("stderr lacks the demo's lines:\n%s", res.stderr)
	}
	suites := readJUnit(t, junit)
	if len(suites.Suites) != 2 || suites.Tests != 4 || suites.Failures != 0 {
		t.Errorf("JUnit: %d suites, %d tests, %d failures; want 2, 4, 0 (the naive fake's failure is expected)", len(suites.Suites), suites.Tests, suites.Failures)
	}
}

// The JUnit XML as a CI system reads it, declared apart from the code that
// writes it.
type xmlSuites struct {
	XMLName  xml.Name   `xml:"testsuites"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Skipped  int        `xml:"skipped,attr"`
	Time     string     `xml:"time,attr"`
	Suites   []xmlSuite `xml:"testsuite"`
}

type xmlSuite struct {
	Name     string    `xml:"name,attr"`
	Tests    int       `xml:"tests,attr"`
	Failures int       `xml:"failures,attr"`
	Skipped  int       `xml:"skipped,attr"`
	Time     string    `xml:"time,attr"`
	Cases    []xmlCase `xml:"testcase"`
}

type xmlCase struct {
	Name      string `xml:"name,attr"`
	Classname string `xml:"classname,attr"`
	Time      string `xml:"time,attr"`
	Failure   *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

func readJUnit(t *testing.T, path string) xmlSuites {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s xmlSuites
	if err := xml.Unmarshal(b, &s); err != nil {
		t.Fatalf("the JUnit file does not parse: %v\n%s", err, b)
	}
	return s
}

// TestProbeJUnit checks -junit against a server that fails, skips and
// passes one criterion each, by parsing the file back.
func TestProbeJUnit(t *testing.T) {
	t.Parallel()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	banner := "starting <up> ]]> & away"
	res := mcpstdio(t, time.Minute, "probe", "-junit", junit, "-run", "^(stdout-clean|result-bounded|era)$", "--", binary, "fake", "-banner", banner)
	if res.code != 1 {
		t.Errorf("exit %d, want 1 (stdout-clean fails)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	s := readJUnit(t, junit)
	if len(s.Suites) != 1 {
		t.Fatalf("%d testsuites, want 1", len(s.Suites))
	}
	suite := s.Suites[0]
	if suite.Name != shellQuote([]string{binary, "fake", "-banner", banner}) || suite.Tests != 3 || suite.Failures != 1 || suite.Skipped != 1 ||
		s.Tests != 3 || s.Failures != 1 || s.Skipped != 1 {
		t.Errorf("testsuite %q: %d tests, %d failures, %d skipped (all: %d, %d, %d); want the command, 3, 1, 1",
			suite.Name, suite.Tests, suite.Failures, suite.Skipped, s.Tests, s.Failures, s.Skipped)
	}
	var names []string
	var sum float64
	for _, c := range suite.Cases {
		names = append(names, c.Name)
		secs, err := strconv.ParseFloat(c.Time, 64)
		if err != nil || secs <= 0 || secs > 60 {
			t.Errorf("%s: time %q, want seconds", c.Name, c.Time)
		}
		sum += secs
		if !strings.Contains(c.SystemOut, "evidence: ") || !strings.Contains(c.SystemOut, "rule: ") || !strings.Contains(c.SystemOut, "protocol: ") {
			t.Errorf("%s: system-out lacks evidence, rule or protocol:\n%s", c.Name, c.SystemOut)
		}
		switch c.Name {
		case "stdout-clean":
			if c.Failure == nil || c.Skipped != nil || !strings.Contains(c.Failure.Message, "not clean") ||
				!strings.Contains(c.Failure.Text, banner) || !strings.Contains(c.SystemOut, banner) {
				t.Errorf("stdout-clean: failure %+v, skipped %v; want a failure quoting the banner %q", c.Failure, c.Skipped, banner)
			}
		case "result-bounded":
			if c.Skipped == nil || c.Failure != nil || !strings.Contains(c.Skipped.Message, "no Bounded tool call") {
				t.Errorf("result-bounded: skipped %v, failure %v; want skipped with the reason", c.Skipped, c.Failure)
			}
		case "era":
			if c.Failure != nil || c.Skipped != nil || !strings.Contains(c.SystemOut, "verdict: pass") {
				t.Errorf("era: failure %v, skipped %v, system-out %q; want a pass", c.Failure, c.Skipped, c.SystemOut)
			}
		}
	}
	if diff := cmp.Diff([]string{"stdout-clean", "result-bounded", "era"}, names); diff != "" {
		t.Errorf("testcases mismatch (-want +got):\n%s", diff)
	}
	if total, err := strconv.ParseFloat(suite.Time, 64); err != nil || total < sum*0.9 {
		t.Errorf("testsuite time %q, want seconds, at least the testcases' %.3f", suite.Time, sum)
	}
}

// TestProbeNotAServerReports checks the JSON and JUnit of a server that
// cannot be probed: one result, "start", a failure.
func TestProbeNotAServerReports(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("true"); err != nil {
		t.Skipf("true is not available on %s: %v", runtime.GOOS, err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	res := mcpstdio(t, 30*time.Second, "probe", "-json", "-junit", junit, "--", "true")
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	reps := jsonReports(t, res.stdout)
	if len(reps) != 1 || passedField(t, res.stdout) {
		t.Fatalf("stdout:\n%s\nwant one report, not passed", res.stdout)
	}
	rep := reps[0]
	if len(rep.Results) != 1 || rep.Results[0].Name != "start" || rep.Results[0].Verdict != assertions.Fail ||
		!strings.Contains(rep.Results[0].Evidence, "could not start it and negotiate MCP") || !cmp.Equal(rep.Command, []string{"true"}) {
		t.Errorf("report %+v: want the command and one failed result, start, saying why", rep)
	}
	s := readJUnit(t, junit)
	if s.Tests != 1 || s.Failures != 1 || len(s.Suites) != 1 || s.Suites[0].Cases[0].Name != "start" {
		t.Errorf("JUnit %+v: want one failed testcase, start", s)
	}
}

// TestProbeVerbose checks that -v prints the rule of every criterion,
// whatever its verdict.
func TestProbeVerbose(t *testing.T) {
	t.Parallel()
	res := mcpstdio(t, time.Minute, "probe", "-v", "-run", "^(stdout-clean|result-bounded|era)$", "--", binary, "fake", "-banner", "hi")
	lines := strings.Split(res.stdout, "\n")
	seen := map[assertions.Verdict]bool{}
	for i, line := range lines {
		m := verdictLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		seen[assertions.Verdict(strings.ToLower(m[1]))] = true
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "        rule: ") {
			t.Errorf("%s: no rule on the line after its verdict:\n%s", m[2], res.stdout)
		}
	}
	if !seen[assertions.Pass] || !seen[assertions.Fail] || !seen[assertions.Skip] {
		t.Errorf("verdicts seen %v, want a pass, a failure and a skip:\n%s", seen, res.stdout)
	}
}

// TestProbeExpect checks -expect: an expected failure does not fail the
// probe and is marked; an expectation that no longer holds fails it.
func TestProbeExpect(t *testing.T) {
	t.Parallel()
	args := []string{"probe", "-run", "^(stdout-clean|era)$"}
	server := []string{"--", binary, "fake", "-banner", "hi"}
	res := mcpstdio(t, time.Minute, append(append(args, "-expect", "stdout-clean=fail"), server...)...)
	if res.code != 0 || !strings.Contains(res.stdout, "  FAIL* stdout-clean") || !strings.Contains(res.stdout, "(1 as expected, marked *)") {
		t.Errorf("-expect stdout-clean=fail: exit %d, want 0 and the failure marked as expected\nstdout:\n%s", res.code, res.stdout)
	}
	res = mcpstdio(t, time.Minute, append(append(args, "-json", "-expect", "stdout-clean=fail", "-expect", "era=fail"), server...)...)
	if res.code != 1 {
		t.Errorf("-expect era=fail on a server that passes era: exit %d, want 1", res.code)
	}
	reps := jsonReports(t, res.stdout)
	if len(reps) != 1 || passedField(t, res.stdout) || reps[0].Err() == nil || !strings.Contains(reps[0].Err().Error(), "update Expect") {
		t.Errorf("report:\n%s\nwant not passed, saying to update the expectation of era", res.stdout)
	}
	// The text a person reads says it where JUnit and go test do: on the
	// criterion's line, and counted apart on the closing line.
	if !regexp.MustCompile(`(?m)^  PASS +era .*expected fail, got pass: update -expect; `).MatchString(res.stderr) ||
		!regexp.MustCompile(`(?m)^1 passed, 1 failed, 0 warned, 0 skipped in .* \(1 as expected, marked \*\); 1 expectation failed \(era\): update -expect$`).MatchString(res.stderr) {
		t.Errorf("text output:\n%s\nwant the era line to say \"expected fail, got pass: update -expect\" and the closing line to count the expectation apart", res.stderr)
	}
}

// TestProbeBaseline checks -baseline with reports of two servers: one
// that passes stdout-clean and one that fails it.
func TestProbeBaseline(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := []string{"-run", "^(stdout-clean|era)$"}
	good := []string{"--", binary, "fake"}
	bad := []string{"--", binary, "fake", "-banner", "hi"}
	baseline := func(name string, server []string) string {
		res := mcpstdio(t, time.Minute, append(append([]string{"probe", "-json"}, run...), server...)...)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(res.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	goodReport, badReport := baseline("good.json", good), baseline("bad.json", bad)
	tests := []struct {
		name     string
		baseline string
		server   []string
		code     int
		inStdout []string
	}{
		{"worse", goodReport, bad, 1, []string{"Against the baseline: 1 got worse (1 changed, 1 unchanged)", "  WORSE   stdout-clean                 PASS -> FAIL"}},
		{"a known failure, unchanged", badReport, bad, 0, []string{"Against the baseline: nothing got worse (0 changed, 2 unchanged)"}},
		{"better", badReport, good, 0, []string{"nothing got worse (1 changed", "  better  stdout-clean                 FAIL -> PASS", "(the baseline is a report of another command"}},
	}
	for _, tt := range tests {
		res := mcpstdio(t, time.Minute, append(append([]string{"probe", "-baseline", tt.baseline}, run...), tt.server...)...)
		if res.code != tt.code {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tt.name, res.code, tt.code, res.stdout, res.stderr)
		}
		for _, s := range tt.inStdout {
			if !strings.Contains(res.stdout, s) {
				t.Errorf("%s: stdout lacks %q:\n%s", tt.name, s, res.stdout)
			}
		}
	}
}

// TestProbeInterrupt interrupts a probe after its first result: it stops
// soon, exits 1, and its JSON report holds the results finished and one
// that names the criteria it did not finish.
func TestProbeInterrupt(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("os.Interrupt cannot be sent to a process on windows")
	}
	limit := time.Minute
	if dl, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(dl)-10*time.Second)
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	args := append(append([]string{"probe", "-json"}, fakeCalls...), "--", binary, "fake")
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.WaitDelay = 5 * time.Second
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if verdictLine.MatchString(sc.Text()) {
			break // the first criterion has finished
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		seen = append(seen, sc.Text())
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("the interrupted probe did not end within %v\nstderr:\n%s", limit, strings.Join(seen, "\n"))
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d (%v), want 1", code, err)
	}
	if last := seen[len(seen)-1]; last != "mcpstdio probe: interrupted" {
		t.Errorf("stderr ends %q, want the interrupt said", last)
	}
	reps := jsonReports(t, stdout.String())
	if len(reps) != 1 {
		t.Fatalf("stdout:\n%s\nwant one report", stdout.String())
	}
	results := reps[0].Results
	last := results[len(results)-1]
	if len(results) < 2 || last.Name != "interrupted" || last.Verdict != assertions.Fail || reps[0].Err() == nil {
		t.Fatalf("results %+v: want the finished ones, then a failed one named interrupted", results)
	}
	// Every criterion is either finished or named as not finished.
	var accounted []string
	for _, r := range results[:len(results)-1] {
		accounted = append(accounted, r.Name)
	}
	_, notRun, _ := strings.Cut(last.Evidence, ": ")
	accounted = append(accounted, strings.Split(notRun, ", ")...)
	if diff := cmp.Diff(assertions.ServerCriterionNames(), accounted); diff != "" {
		t.Errorf("criteria finished, then not finished, mismatch (-want +got):\n%s\nevidence: %s", diff, last.Evidence)
	}
}

// TestProbeSkipHints: without call flags, probe names, after the summary,
// the flag that would run each criterion it skipped, with an example call
// from the server's own tools/list.
func TestProbeSkipHints(t *testing.T) {
	t.Parallel()
	res := mcpstdio(t, time.Minute, "probe", "-run", "^(cancel-during-work|cancel-after-output-began|result-bounded|era)$", "--", binary, "fake")
	for _, want := range []string{
		"to run the criteria skipped for want of a tool call, give (examples from this server's tools/list; fill in the arguments):",
		"  -large big   a call whose result is far larger than the pipe (cancel-after-output-began); its arguments: blocks, bytes, ",
		"  -slow slow   a call that works for seconds unless cancelled (cancel-during-work); its arguments: intervalMs, steps",
		"  -bounded search   a call that could return a lot (result-bounded); its arguments: ",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("probe's output does not say %q:\n%s", want, res.stdout)
		}
	}
}
