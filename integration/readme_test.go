package integration_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestREADMEVerdictTable checks the README's table of what the criteria say
// about the SDKs against the verdicts these tests assert, so that the table
// cannot drift from what was measured.
func TestREADMEVerdictTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "| criterion | go-sdk server | mcp-go server | go-sdk client | mcp-go client |")
	if !ok {
		t.Fatal("README.md has no SDK verdict table")
	}
	columns := []map[string]assertions.Verdict{{}, {}, {}, {}}
	cell := regexp.MustCompile(`\*|[¹²³⁴⁵⁶⁷⁸⁹⁰]`)
	for line := range strings.Lines(table) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if len(columns[0])+len(columns[2]) > 0 {
				break // the end of the table
			}
			continue
		}
		f := strings.Split(strings.Trim(line, "|"), "|")
		if len(f) != 5 || strings.HasPrefix(strings.TrimSpace(f[0]), "---") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSpace(f[0]), " ")
		for i, c := range f[1:] {
			if v := strings.TrimSpace(cell.ReplaceAllString(c, "")); v != "" {
				columns[i][name] = assertions.Verdict(v)
			}
		}
	}
	for i, want := range []map[string]assertions.Verdict{
		goSDKServerVerdicts("child"), mcpGoServerVerdicts("child"), goSDKHostVerdicts(), mcpGoHostVerdicts(),
	} {
		if diff := cmp.Diff(want, columns[i]); diff != "" {
			t.Errorf("README.md's column %d disagrees with the verdicts the integration tests assert (-tests +README):\n%s", i+1, diff)
		}
	}
}
