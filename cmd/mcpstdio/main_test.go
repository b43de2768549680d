package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/watchdog"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// binary is the command under test, built once by TestMain.
var binary string

// TestMain builds the command and runs the tests under goleak, with a
// state directory of their own (testkit.PrivateState). The tests
// mostly wait for the command's criteria (their windows and bounds), not
// compute, and the command is built without the race detector: six per
// CPU run at once, with the detector too (testkit.ParallelForWaits; under
// it, 32 s → 19 s here at four, 15 → 12 s at six, the same CPU).
func TestMain(m *testing.M) {
	watchdog.Serve() // this binary, re-executed by a probe run in-process
	testkit.ParallelForWaits(6, 6)
	if err := testkit.PrivateState(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dir, err := os.MkdirTemp("", "mcpstdio-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if binary, err = cmdtest.Build(dir, ".", "mcpstdio"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		testkit.Exit(code)
	}))
}

// result is how a run of the command ended (cmdtest.Result).
type result struct {
	stdout, stderr string
	code           int
}

// mcpstdio runs the built command with args, bounded by limit and by the
// test's deadline, and fails the test if it does not finish.
func mcpstdio(t *testing.T, limit time.Duration, args ...string) result {
	t.Helper()
	return resultOf(cmdtest.Run(t, limit, nil, nil, binary, args...))
}

func resultOf(r cmdtest.Result) result { return result{r.Stdout, r.Stderr, r.Code} }

// fakeCalls are the tool-call flags that make every criterion apply to the
// fake, as probe presets them without a server command.
var fakeCalls = []string{
	"-large", `big {"bytes":262144}`,
	"-slow", `slow {"steps":100000,"intervalMs":10}`,
	"-bounded", `search {"query":"q","total":5000}`,
	"-oversized-request", "4194304",
}

// verdictLine matches a criterion's progress line (* marks an expected
// verdict).
var verdictLine = regexp.MustCompile(`(?m)^  (PASS|FAIL|WARN|SKIP)\*?\s+(\S+)\s`)

// verdicts collects the criterion lines of text.
func verdicts(text string) map[string]assertions.Verdict {
	m := map[string]assertions.Verdict{}
	for _, sub := range verdictLine.FindAllStringSubmatch(text, -1) {
		m[sub[2]] = assertions.Verdict(strings.ToLower(sub[1]))
	}
	return m
}

// TestProbeWithoutServer runs the README's command: the fake, good and
// naive, each judged against what it is expected to do. Two criteria stand
// for the battery (assertions' tests judge every criterion against the
// fakes): one the naive fake fails, one it passes.
func TestProbeWithoutServer(t *testing.T) {
	t.Parallel()
	res := mcpstdio(t, 2*time.Minute, "probe", "-within", "1s", "-run", demoRun)
	if res.code != 0 {
		t.Fatalf("mcpstdio probe: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	good, naive, ok := strings.Cut(res.stdout, "== naive fake")
	if !ok || !strings.Contains(good, "== good fake") {
		t.Fatalf("mcpstdio probe: output lacks the good and naive sections:\n%s", res.stdout)
	}
	wantGood := map[string]assertions.Verdict{"reads-while-blocked": assertions.Pass, "era": assertions.Pass}
	if diff := cmp.Diff(wantGood, verdicts(good)); diff != "" {
		t.Errorf("good fake verdicts mismatch (-want +got):\n%s\noutput:\n%s", diff, res.stdout)
	}
	wantNaive := map[string]assertions.Verdict{"reads-while-blocked": assertions.Fail, "era": assertions.Pass}
	if diff := cmp.Diff(wantNaive, verdicts(naive)); diff != "" {
		t.Errorf("naive fake verdicts mismatch (-want +got):\n%s\noutput:\n%s", diff, res.stdout)
	}
	if !strings.Contains(naive, "As expected") || !strings.Contains(naive, "reads-while-blocked") {
		t.Errorf("mcpstdio probe does not say the naive fake failed reads-while-blocked as expected:\n%s", naive)
	}
	if !strings.Contains(naive, "\nmcpstdio fake -naive\n") {
		t.Errorf("mcpstdio probe names the naive fake other than as \"mcpstdio fake -naive\" (not by the path of a build):\n%s", naive)
	}
}

// demoRun selects the criteria the command's tests run: one the naive fake
// fails and one every fake passes.
const demoRun = "^(reads-while-blocked|era)$"

// TestProbeJSON checks the report of the good fake in JSON: stdout is the
// report alone, on one line, with the command's argv, and every criterion
// run passes. stderr is not a terminal: it gets plain progress lines.
func TestProbeJSON(t *testing.T) {
	t.Parallel()
	wantRun := map[string]assertions.Verdict{"reads-while-blocked": assertions.Pass, "era": assertions.Pass}
	args := append(append([]string{"probe", "-json", "-run", demoRun}, fakeCalls...), "--", binary, "fake")
	res := mcpstdio(t, time.Minute, args...)
	if res.code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", res.code, res.stderr)
	}
	if n := strings.Count(res.stdout, "\n"); n != 1 || !strings.HasSuffix(res.stdout, "\n") {
		t.Errorf("stdout has %d lines, want the report on one line:\n%s", n, res.stdout)
	}
	var rep assertions.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, res.stdout)
	}
	if diff := cmp.Diff(wantRun, rep.Verdicts()); diff != "" {
		t.Errorf("good fake verdicts mismatch (-want +got):\n%s\nreport:\n%s", diff, &rep)
	}
	if diff := cmp.Diff([]string{binary, "fake"}, rep.Command); diff != "" {
		t.Errorf("report command mismatch (-want +got):\n%s", diff)
	}
	var summary struct {
		Passed *bool          `json:"passed"`
		Counts map[string]int `json:"counts"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &summary); err != nil || summary.Passed == nil || !*summary.Passed ||
		summary.Counts["pass"] != len(wantRun) {
		t.Errorf("report summary: passed %v, counts %v (%v); want passed and every criterion counted as a pass", summary.Passed, summary.Counts, err)
	}
	for _, r := range rep.Results {
		if r.Evidence == "" || r.Duration <= 0 || r.Era == "" {
			t.Errorf("result without evidence, duration or protocol: %+v", r)
		}
	}
	if !strings.Contains(rep.Subject, binary) || rep.Duration <= 0 {
		t.Errorf("report subject %q, duration %v: want the command and a duration", rep.Subject, rep.Duration)
	}
	// Progress went to stderr, plain lines (no live status: stderr is a
	// pipe), one per criterion.
	if diff := cmp.Diff(wantRun, verdicts(res.stderr)); diff != "" {
		t.Errorf("progress on stderr mismatch (-want +got):\n%s\nstderr:\n%s", diff, res.stderr)
	}
	if strings.Contains(res.stderr, "\r") || strings.Contains(res.stderr, "(starting the server)") {
		t.Errorf("stderr is not a terminal but got the live status:\n%q", res.stderr)
	}
	if n, want := strings.Count(res.stderr, "\n"), len(wantRun)+2; n != want {
		t.Errorf("stderr has %d lines, want %d: the heading, one per criterion, the summary:\n%s", n, want, res.stderr)
	}
}

// TestProbeNaive checks the verdicts, summary and exit status for a
// server that fails a criterion.
func TestProbeNaive(t *testing.T) {
	t.Parallel()
	args := append(append([]string{"probe", "-within", "1s", "-run", demoRun}, fakeCalls...), "--", binary, "fake", "-naive")
	res := mcpstdio(t, time.Minute, args...)
	if res.code != 1 {
		t.Errorf("exit %d, want 1", res.code)
	}
	wantV := map[string]assertions.Verdict{"reads-while-blocked": assertions.Fail, "era": assertions.Pass}
	if diff := cmp.Diff(wantV, verdicts(res.stdout)); diff != "" {
		t.Errorf("naive fake verdicts mismatch (-want +got):\n%s\nstdout:\n%s", diff, res.stdout)
	}
	if !strings.Contains(res.stdout, "1 passed, 1 failed, 0 warned, 0 skipped in ") {
		t.Errorf("no summary line in the output:\n%s", res.stdout)
	}
}

// TestProbeRun checks -run: only the selected criteria run, and one whose
// tool call is not given is skipped without failing the probe.
func TestProbeRun(t *testing.T) {
	t.Parallel()
	res := mcpstdio(t, time.Minute, "probe", "-json", "-run", "^(cancel-during-work|era)$", "--", binary, "fake")
	if res.code != 0 {
		t.Errorf("exit %d, want 0\nstderr:\n%s", res.code, res.stderr)
	}
	var rep assertions.Report
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, res.stdout)
	}
	wantV := map[string]assertions.Verdict{"cancel-during-work": assertions.Skip, "era": assertions.Pass}
	if diff := cmp.Diff(wantV, rep.Verdicts()); diff != "" {
		t.Errorf("verdicts with -run mismatch (-want +got):\n%s", diff)
	}
}

// TestProbeNotAServer checks that a command that does not start, or does
// not speak MCP, ends the probe quickly with one error line.
func TestProbeNotAServer(t *testing.T) {
	for _, argv := range [][]string{{filepath.Join(t.TempDir(), "no-such-server")}, {"true"}, {"cat"}} {
		t.Run(filepath.Base(argv[0]), func(t *testing.T) {
			t.Parallel()
			if _, err := exec.LookPath(argv[0]); err != nil && filepath.Base(argv[0]) != "no-such-server" {
				t.Skipf("%s is not available on %s: %v", argv[0], runtime.GOOS, err)
			}
			res := mcpstdio(t, 30*time.Second, append([]string{"probe", "--"}, argv...)...)
			if res.code != 1 {
				t.Errorf("exit %d, want 1", res.code)
			}
			if res.stdout != "" {
				t.Errorf("stdout %q, want nothing: no criterion ran", res.stdout)
			}
			lines := strings.Split(strings.TrimSuffix(res.stderr, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "mcpstdio probe: "+argv[0]+": ") ||
				!strings.Contains(lines[0], "could not start it and negotiate MCP") {
				t.Errorf("stderr:\n%s\nwant one line saying the command could not be started as an MCP server", res.stderr)
			}
		})
	}
}

// TestUsageErrors checks bad command lines: one line on stderr, exit 2,
// nothing started.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	report := `{"subject":"s","results":[{"name":"era","verdict":"pass","evidence":"e"}]}` + "\n"
	empty, two, notJSON := write("empty.json", `{"subject":"s"}`), write("two.json", report+report), write("text.json", "PASS era\n")
	tests := []struct {
		args []string
		want string // in the error line
	}{
		{[]string{"probe", "-nope"}, "-nope"},
		{[]string{"probe", "-run", "("}, "-run"},
		{[]string{"probe", "-run", "no-such-criterion"}, "matches no criterion"},
		{[]string{"probe", "-large", `{"bytes":1}`}, "want a tool name"},
		{[]string{"probe", "-slow", `slow {"steps":`}, "want a JSON object"},
		{[]string{"probe", "-slow", `slow [1]`}, "want a JSON object"},
		{[]string{"probe", "-cheap", `echo {} {}`}, "unexpected text"},
		{[]string{"probe", "-within", "-1s"}, "-within"},
		{[]string{"probe", "-flood", "-3"}, "-flood"},
		{[]string{"probe", "-within", "soon"}, "-within"},
		{[]string{"probe", "-slow-duration", "-1s"}, "-slow-duration"},
		{[]string{"probe", "--"}, `no server command after "--"`},
		{[]string{"probe", "-v", "-json", "--"}, `no server command after "--"`},
		{[]string{"probe", "-run", "--"}, "matches no criterion"}, // "--" is -run's value, not the end of the flags
		{[]string{"probe", "-expect", "era"}, "criterion=verdict"},
		{[]string{"probe", "-expect", "era=maybe", "--", "true"}, "one of pass, fail, warn, skip"},
		{[]string{"probe", "-expect", "teleport=fail", "--", "true"}, "names no criterion"},
		{[]string{"probe", "-expect", "era=fail,era=pass", "--", "true"}, "era expected both fail and pass"},
		{[]string{"probe", "-expect", "era=fail"}, "need a server command"},
		{[]string{"probe", "-baseline", "report.json"}, "need a server command"},
		{[]string{"probe", "-baseline", filepath.Join(dir, "missing.json"), "--", "true"}, "-baseline"},
		{[]string{"probe", "-baseline", empty, "--", "true"}, "a report with no results"},
		{[]string{"probe", "-baseline", two, "--", "true"}, "holds 2 reports"},
		{[]string{"probe", "-baseline", notJSON, "--", "true"}, "not a report of mcpstdio probe -json"},
		{[]string{"probe", "-junit", filepath.Join(dir, "no", "such", "dir", "junit.xml"), "--", "true"}, "-junit"},
		{[]string{"fake", "-nope"}, "-nope"},
		{[]string{"fake", "-tools", "echo,teleport"}, "teleport"},
		{[]string{"fake", "stray"}, "stray"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, &stdout, &stderr)
		line := strings.TrimSuffix(stderr.String(), "\n")
		if code != 2 || stdout.Len() != 0 || strings.Contains(line, "\n") || !strings.Contains(line, tt.want) {
			t.Errorf("run(%q) = %d, stdout %q, stderr %q; want 2, no stdout, one line naming %q", tt.args, code, stdout.String(), stderr.String(), tt.want)
		}
	}
	// The same through the real binary, for the real exit status.
	res := mcpstdio(t, 30*time.Second, "probe", "-nope")
	if res.code != 2 || strings.Count(res.stderr, "\n") != 1 {
		t.Errorf("mcpstdio probe -nope: exit %d, stderr %q; want 2 and one line", res.code, res.stderr)
	}
}

// TestHelp checks the help and unknown-command paths.
func TestHelp(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{nil, 2, "", "usage:"},
		{[]string{"teleport"}, 2, "", `unknown command "teleport"`},
		{[]string{"help"}, 0, "mcpstdio probe", ""},
		{[]string{"-h"}, 0, "mcpstdio fake", ""},
		{[]string{"help", "probe"}, 0, "-large tool call", ""},
		{[]string{"probe", "-h"}, 0, "-within duration", ""},
		{[]string{"help", "teleport"}, 2, "", "unknown command"},
		{[]string{"version"}, 0, "mcpstdio (devel) go", ""}, // a test binary: no version, no commit
		{[]string{"--version"}, 0, "mcpstdio (devel) go", ""},
		{[]string{"help", "version"}, 0, "usage: mcpstdio version", ""},
		{[]string{"help", "wrap"}, 0, "usage: mcpstdio wrap", ""},
		{[]string{"help", "unwrap"}, 0, "mcpstdio unwrap FILE", ""},
		{[]string{"wrap"}, 2, "", "no config file"},
		{[]string{"unwrap"}, 2, "", "no config file"},
		{[]string{"help", "probe"}, 0, "-config file", ""},
		{[]string{"version", "x"}, 2, "", "unexpected argument"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), tt.args, &stdout, &stderr)
		if code != tt.code || !strings.Contains(stdout.String(), tt.inStdout) || !strings.Contains(stderr.String(), tt.inStderr) ||
			(tt.inStdout == "") != (stdout.Len() == 0) {
			t.Errorf("run(%q) = %d\nstdout:\n%s\nstderr:\n%s\nwant %d, %q in stdout, %q in stderr", tt.args, code, stdout.String(), stderr.String(), tt.code, tt.inStdout, tt.inStderr)
		}
	}
}

// TestFakeHelp checks that "mcpstdio fake -h" lists the fake's flags,
// and each tool the fake offers with each of its arguments (the names
// tools/list gives, with their types): it listed the tools' names only.
func TestFakeHelp(t *testing.T) {
	res := mcpstdio(t, 30*time.Second, "fake", "-h")
	if res.code != 0 {
		t.Errorf("mcpstdio fake -h: exit %d, want 0", res.code)
	}
	for _, flag := range []string{"-naive", "-tools", "-report", "-ignore-cancel"} {
		if !strings.Contains(res.stdout, flag) {
			t.Errorf("mcpstdio fake -h does not list %s:\n%s", flag, res.stdout)
		}
	}
	fake := cmdtest.Start(t, nil, nil, binary, "fake")
	fake.Call(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	line := fake.Call(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var tools struct {
		Result struct {
			Tools []struct {
				Name        string
				InputSchema struct {
					Properties map[string]struct{ Type string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(line), &tools); err != nil || len(tools.Result.Tools) == 0 {
		t.Fatalf("tools/list of the fake: %v\n%s", err, line)
	}
	// The help's tools: "  NAME", then its description and one line per
	// argument, "    \tARG (TYPE): what it means".
	listed := map[string]map[string]string{}
	_, help, _ := strings.Cut(res.stdout, "\ntools (")
	tool := ""
	for _, l := range strings.Split(help, "\n") {
		if name, ok := strings.CutPrefix(l, "  "); ok && name != "" && !strings.HasPrefix(name, " ") {
			tool, listed[name] = name, map[string]string{}
		} else if m := regexp.MustCompile(`^    \t(\w+) \((\w+)\): .`).FindStringSubmatch(l); m != nil && tool != "" {
			listed[tool][m[1]] = m[2]
		}
	}
	for _, tl := range tools.Result.Tools {
		for arg, p := range tl.InputSchema.Properties {
			if listed[tl.Name][arg] != p.Type {
				t.Errorf("mcpstdio fake -h does not list %s's argument %s (%s): it lists %v", tl.Name, arg, p.Type, listed[tl.Name])
			}
		}
	}
}

func TestParseToolCall(t *testing.T) {
	tests := []struct {
		in   string
		want *assertions.ToolCall
	}{
		{"echo", &assertions.ToolCall{Name: "echo"}},
		{"  echo  ", &assertions.ToolCall{Name: "echo"}},
		{`big {"bytes":262144}`, &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": json.Number("262144")}}},
		{"search\t{\"query\":\"a b\",\"n\":9007199254740993}", &assertions.ToolCall{Name: "search", Arguments: map[string]any{"query": "a b", "n": json.Number("9007199254740993")}}},
		{`echo {}`, &assertions.ToolCall{Name: "echo", Arguments: map[string]any{}}},
		{"", nil},
		{`{"a":1}`, nil},
		{`echo null`, nil},
		{`echo "text"`, nil},
		{`echo {"a":1}}`, nil},
	}
	for _, tt := range tests {
		got, err := parseToolCall(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("parseToolCall(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseToolCall(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseToolCall(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
	// Large numbers keep their exact text on the wire.
	call, _ := parseToolCall(`search {"n":9007199254740993}`)
	if s := call.String(); s != `search {"n":9007199254740993}` {
		t.Errorf("String() = %s, want the number unchanged", s)
	}
}
