package integration_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// verdictTableHeader is the header row of the table of what the criteria
// say about the SDKs, in the README and in VERDICTS.md.
const verdictTableHeader = "| criterion | go-sdk server | mcp-go server | ts-sdk server | everything server | go-sdk client | mcp-go client | ts-sdk client |"

// TestREADMEVerdictTable checks the table of what the criteria say about the
// SDKs, in the README and in VERDICTS.md, against the verdicts these tests
// assert, so that the table cannot drift from what was measured.
func TestREADMEVerdictTable(t *testing.T) {
	want := []map[string]assertions.Verdict{
		goSDKServerVerdicts("child"), mcpGoServerVerdicts("child"), tsSDKServerVerdicts(), everythingServerVerdicts(),
		goSDKHostVerdicts(), mcpGoHostVerdicts(), tsSDKHostVerdicts(),
	}
	header := strings.Split(strings.Trim(verdictTableHeader, "|"), "|")
	for _, file := range []string{"../README.md", "VERDICTS.md"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, table, ok := strings.Cut(string(b), verdictTableHeader)
		if !ok {
			t.Errorf("%s has no SDK verdict table (header %q)", file, verdictTableHeader)
			continue
		}
		columns := make([]map[string]assertions.Verdict, len(want))
		for i := range columns {
			columns[i] = map[string]assertions.Verdict{}
		}
		cell := regexp.MustCompile(`\*|[¹²³⁴⁵⁶⁷⁸⁹⁰]`)
		rows := 0
		for line := range strings.Lines(table) {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "|") {
				if rows > 0 {
					break // the end of the table
				}
				continue
			}
			f := strings.Split(strings.Trim(line, "|"), "|")
			if strings.HasPrefix(strings.TrimSpace(f[0]), "---") {
				continue
			}
			if len(f) != len(header) {
				t.Errorf("%s: a row of the SDK verdict table has %d cells, want %d: %s", file, len(f), len(header), line)
				continue
			}
			rows++
			name, _, _ := strings.Cut(strings.TrimSpace(f[0]), " ")
			for i, c := range f[1:] {
				if v := strings.TrimSpace(cell.ReplaceAllString(c, "")); v != "" {
					columns[i][name] = assertions.Verdict(v)
				}
			}
		}
		for i := range want {
			if diff := cmp.Diff(want[i], columns[i]); diff != "" {
				t.Errorf("%s's column %q disagrees with the verdicts the integration tests assert (-tests +table):\n%s", file, strings.TrimSpace(header[i+1]), diff)
			}
		}
	}
}
