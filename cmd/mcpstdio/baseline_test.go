package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// reportOf makes a report with one result per name=verdict pair.
func reportOf(pairs ...string) *assertions.Report {
	rep := &assertions.Report{Subject: "./server", Command: []string{"./server"}}
	for _, p := range pairs {
		name, v, _ := strings.Cut(p, "=")
		rep.Results = append(rep.Results, assertions.Result{Name: name, Verdict: assertions.Verdict(v), Evidence: "e"})
	}
	return rep
}

func TestCompareReports(t *testing.T) {
	tests := []struct {
		name      string
		base, cur *assertions.Report
		worse     []string // names of the changes that are worse
		changed   []string // names of every change
	}{
		{"same", reportOf("a=pass", "b=fail"), reportOf("a=pass", "b=fail"), nil, nil},
		{"a known failure stays", reportOf("a=fail"), reportOf("a=fail"), nil, nil},
		{"pass to fail", reportOf("a=pass", "b=pass"), reportOf("a=pass", "b=fail"), []string{"b"}, []string{"b"}},
		{"fail to pass", reportOf("a=fail"), reportOf("a=pass"), nil, []string{"a"}},
		{"pass to warn", reportOf("a=pass"), reportOf("a=warn"), []string{"a"}, []string{"a"}},
		{"warn to pass", reportOf("a=warn"), reportOf("a=pass"), nil, []string{"a"}},
		{"skip to fail", reportOf("a=skip"), reportOf("a=fail"), []string{"a"}, []string{"a"}},
		{"fail to skip", reportOf("a=fail"), reportOf("a=skip"), nil, []string{"a"}},
		{"pass to skip: nothing checked any more", reportOf("a=pass"), reportOf("a=skip"), []string{"a"}, []string{"a"}},
		{"warn to skip", reportOf("a=warn"), reportOf("a=skip"), []string{"a"}, []string{"a"}},
		{"skip to warn", reportOf("a=skip"), reportOf("a=warn"), nil, []string{"a"}},
		{"a new criterion that fails", reportOf("a=pass"), reportOf("a=pass", "n=fail"), []string{"n"}, []string{"n"}},
		{"a new criterion that passes, warns or skips", reportOf("a=pass"), reportOf("a=pass", "n=pass", "w=warn", "s=skip"), nil, []string{"n", "w", "s"}},
		{"a criterion not run", reportOf("a=pass", "b=fail"), reportOf("a=pass"), nil, []string{"b"}},
		{"the server no longer starts", reportOf("a=pass"), reportOf("start=fail"), []string{"start"}, []string{"start", "a"}},
	}
	for _, tt := range tests {
		changes := compareReports(tt.base, tt.cur)
		var names, worseNames []string
		for _, c := range changes {
			names = append(names, c.name)
			if c.worse() {
				worseNames = append(worseNames, c.name)
			}
		}
		if diff := cmp.Diff(tt.changed, names); diff != "" {
			t.Errorf("%s: changes mismatch (-want +got):\n%s", tt.name, diff)
		}
		if diff := cmp.Diff(tt.worse, worseNames); diff != "" {
			t.Errorf("%s: worse mismatch (-want +got):\n%s", tt.name, diff)
		}
		if n := worse(changes); n != len(tt.worse) {
			t.Errorf("%s: worse(changes) = %d, want %d", tt.name, n, len(tt.worse))
		}
	}
}

// TestPrintChanges checks what the comparison prints.
func TestPrintChanges(t *testing.T) {
	var buf bytes.Buffer
	p := &printer{w: &buf, ctx: t.Context()}
	base := reportOf("a=pass", "b=fail", "c=pass", "gone=warn")
	cur := reportOf("a=fail", "b=pass", "c=pass", "n=fail")
	cur.Command = []string{"./other"}
	cur.Subject = "./other"
	p.changes(base, cur, compareReports(base, cur))
	want := `
(the baseline is a report of another command: ./server)
Against the baseline: 2 got worse (4 changed, 1 unchanged).
  WORSE   a                            PASS -> FAIL
  better  b                            FAIL -> PASS
  WORSE   n                            FAIL (not in the baseline)
  not run gone                         was WARN
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("printed comparison mismatch (-want +got):\n%s", diff)
	}
}

// TestReadBaseline reads back what -json writes.
func TestReadBaseline(t *testing.T) {
	rep := reportOf("stdout-clean=pass", "era=fail")
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep.Verdicts(), got.Verdicts()); diff != "" {
		t.Errorf("baseline verdicts mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(rep.Command, got.Command); diff != "" {
		t.Errorf("baseline command mismatch (-want +got):\n%s", diff)
	}
	bad := reportOf("era=maybe")
	b, _ = json.Marshal(bad)
	os.WriteFile(path, b, 0o644)
	if _, err := readBaseline(path); err == nil || !strings.Contains(err.Error(), `verdict "maybe"`) {
		t.Errorf("readBaseline of a report with verdict maybe: %v, want an error naming it", err)
	}
}
