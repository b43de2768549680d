package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/cmd/internal/agentconfig"
	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// TestProbeConfig probes the servers of a Gemini CLI settings file: each
// stdio server with its command, environment and working directory (a
// shell records what it was given, then runs the fake), the remote one,
// the one turned off and the one with a variable only the host can fill in
// listed as not probed; one table, JSON and JUnit of the same.
func TestProbeConfig(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the recording server is a POSIX shell script")
	}
	root := t.TempDir()
	sub := filepath.Join(root, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	text := `{
  // servers of this project
  "mcpServers": {
    "good": {"command": "sh", "args": ["-c", "echo \"$GREETING in $PWD\" >> seen; exec \"$0\" fake", ` + q(binary) + `],
             "cwd": "sub", "env": {"GREETING": "hello $USER_NAME_FOR_TEST"}},
    "naive": {"command": ` + q(binary) + `, "args": ["fake", "-naive"]},
    "off": {"command": ` + q(binary) + `, "args": ["fake"], "disabled": true},
    "ask": {"command": ` + q(binary) + `, "args": ["fake", "${input:token}"]},
    "web": {"httpUrl": "https://example.com/mcp"}
  }
}
`
	path := filepath.Join(root, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(root, "junit.xml")
	res := resultOf(cmdtestRun(t, []string{"USER_NAME_FOR_TEST=ann"}, "probe", "-config", path, "-json", "-junit", junit, "-run", "^(stdout-clean|shutdown-stdin-eof)$"))
	if res.code != 0 {
		t.Fatalf("probe -config: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "seen")); err != nil || strings.Count(string(b), "hello ann in "+sub+"\n") != 3 {
		t.Errorf("what the server was given: %q, %v; want 'hello ann in %s' three times: the first start, then once per criterion", b, err, sub)
	}
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var rep assertions.Report
		if err := json.Unmarshal([]byte(line), &rep); err != nil {
			t.Fatalf("a -json line: %v: %s", err, line)
		}
		var vs []string
		for _, r := range rep.Results {
			vs = append(vs, r.Name+"="+string(r.Verdict))
		}
		name, _, _ := strings.Cut(rep.Subject, ":")
		got[name] = strings.Join(vs, " ")
	}
	want := map[string]string{"good": "stdout-clean=pass shutdown-stdin-eof=pass", "naive": "stdout-clean=pass shutdown-stdin-eof=pass",
		"off": "config=skip", "ask": "config=skip", "web": "config=skip"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-json reports mismatch (-want +got):\n%s", diff)
	}
	for _, line := range []string{
		"criterion           good  naive  off  ask  web",
		"stdout-clean        pass  pass   -    -    -",
		"off: turned off in the file (name it to probe it all the same)",
		"ask: ${input:token} is filled in by the host",
		"web: a remote server (https://example.com/mcp), not stdio",
		"2 of 5 servers probed.",
	} {
		if !strings.Contains(res.stderr, line) {
			t.Errorf("the table (on stderr with -json) has no line %q:\n%s", line, res.stderr)
		}
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites junitSuites
	if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) != 5 || suites.Skipped != 3 || suites.Failures != 0 {
		t.Errorf("JUnit: %d suites, %d skipped, %d failures (%v); want 5, 3, 0\n%s", len(suites.Suites), suites.Skipped, suites.Failures, err, b)
	}

	// Named, a server turned off is probed; a failure fails the probe and
	// is in capitals in the table.
	res = resultOf(cmdtestRun(t, nil, "probe", "-config", path, "-run", "^reads-while-blocked$", "-large", `big {"bytes":262144}`, "naive"))
	if res.code != 1 || !strings.Contains(res.stdout, "reads-while-blocked  FAIL") || !strings.Contains(res.stdout, "FAILED: naive") {
		t.Errorf("probe -config naive: exit %d, want 1 and a FAIL\n%s%s", res.code, res.stdout, res.stderr)
	}
	res = resultOf(cmdtestRun(t, nil, "probe", "-config", path, "-run", "^stdout-clean$", "off"))
	if res.code != 0 || !strings.Contains(res.stdout, "stdout-clean  pass") {
		t.Errorf("probe -config off: exit %d, want 0 and a pass\n%s%s", res.code, res.stdout, res.stderr)
	}
	for _, bad := range [][]string{
		{"-config", path, "-large", "big"},
		{"-config", path, "--", binary, "fake"},
		{"-config", path, "nope"},
		{"-config", filepath.Join(root, "missing.json")},
	} {
		if res := mcpstdio(t, time.Minute, append([]string{"probe"}, bad...)...); res.code != 2 || strings.Count(res.stderr, "\n") != 1 {
			t.Errorf("probe %q: exit %d, stderr %q; want 2 and one line", bad, res.code, res.stderr)
		}
	}
}

// cmdtestRun runs the command with env added to the environment.
func cmdtestRun(t *testing.T, env []string, args ...string) cmdtest.Result {
	t.Helper()
	return cmdtest.Run(t, 2*time.Minute, env, nil, binary, args...)
}

// TestDocsConfigTable checks the table docs/config.md shows against the
// one probe -config prints for the same verdicts: every line the page
// shows ("…" stands for lines left out) is one of the table's, in order.
func TestDocsConfigTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```\ncriterion ")
	doc, _, ok2 := strings.Cut("criterion "+rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/config.md shows no table of probe -config")
	}
	report := func(fail string) *assertions.Report {
		rep := &assertions.Report{}
		for _, n := range assertions.ServerCriterionNames() {
			v := assertions.Pass
			if n == fail {
				v = assertions.Fail
			}
			rep.Results = append(rep.Results, assertions.Result{Name: n, Verdict: v})
		}
		return rep
	}
	rows := []configRow{
		{server: &agentconfig.Server{Name: "files"}, report: report("oversized-input")},
		{server: &agentconfig.Server{Name: "github"}, report: report("")},
		{server: &agentconfig.Server{Name: "docs"}, skip: "a remote server (https://example.com/mcp), not stdio"},
	}
	var out strings.Builder
	printConfigTable(&out, rows, assertions.ServerConfig{})
	got := strings.Split(out.String(), "\n")
	i := 0
	for _, line := range strings.Split(strings.TrimSpace(doc), "\n") {
		if line == "…" {
			continue
		}
		for i < len(got) && got[i] != line {
			i++
		}
		if i == len(got) {
			t.Errorf("docs/config.md's table has the line %q, which probe -config does not print (in that order):\n%s", line, out.String())
			return
		}
	}
}
