package assertions

import (
	"strings"
	"testing"
)

// TestEvidenceBounded: a line of evidence is cut to about 1 KiB, head and
// tail kept; a Large call's arguments are given by their size.
func TestEvidenceBounded(t *testing.T) {
	long := "tools/call big " + strings.Repeat("é", 200000) + " the end"
	got := boundLines("first line\n"+long, evidenceLine)
	first, second, _ := strings.Cut(got, "\n")
	if first != "first line" || len(second) > evidenceLine+64 || !strings.HasPrefix(second, "tools/call big ") || !strings.HasSuffix(second, " the end") || !strings.Contains(second, "bytes cut") {
		t.Errorf("boundLines: %d-byte line, want the head, a note of the cut and the tail within ~1 KiB:\n%.300s", len(second), second)
	}
	call := &ToolCall{Name: "big", Arguments: map[string]any{"pad": strings.Repeat("x", 400000)}}
	if d := call.describe(); d != "big with 400010 bytes of arguments" {
		t.Errorf("describe = %q, want the name and the arguments' size", d)
	}
	if d := (&ToolCall{Name: "echo", Arguments: map[string]any{"text": "hi"}}).describe(); d != `echo {"text":"hi"}` {
		t.Errorf("describe of a small call = %q, want it whole", d)
	}
}

// TestSummaryNamesWarned: the closing summary names the warned criteria.
func TestSummaryNamesWarned(t *testing.T) {
	rep := &Report{Results: []Result{{Name: "era", Verdict: Pass}, {Name: "shutdown-stdin-eof", Verdict: Warn}, {Name: "x", Verdict: Warn}}}
	if s := rep.Summary(); !strings.HasPrefix(s, "1 passed, 0 failed, 2 warned (shutdown-stdin-eof, x), 0 skipped in ") {
		t.Errorf("Summary = %q, want the warned criteria named", s)
	}
}
