package main

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// junitOf writes rep as JUnit XML and parses it back.
func junitOf(t *testing.T, rep *assertions.Report) (xmlSuites, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := writeJUnit(&buf, []*assertions.Report{rep}); err != nil {
		t.Fatal(err)
	}
	var s xmlSuites
	if err := xml.Unmarshal(buf.Bytes(), &s); err != nil {
		t.Fatalf("the JUnit XML does not parse: %v\n%q", err, buf.Bytes())
	}
	return s, buf.String()
}

// TestJUnitOutcomes checks which results are JUnit failures and skips:
// what Result.Err refuses fails, so an expected failure (-expect) passes
// and an expectation that no longer holds fails.
func TestJUnitOutcomes(t *testing.T) {
	rep := &assertions.Report{Subject: "./server", Duration: 3 * time.Second, Results: []assertions.Result{
		{Name: "a", Verdict: assertions.Pass, Evidence: "fine"},
		{Name: "b", Verdict: assertions.Fail, Evidence: "broken"},
		{Name: "c", Verdict: assertions.Warn, Evidence: "should not"},
		{Name: "d", Verdict: assertions.Skip, Evidence: "no call"},
		{Name: "e", Verdict: assertions.Fail, Expected: assertions.Fail, Evidence: "known"},
		{Name: "f", Verdict: assertions.Pass, Expected: assertions.Fail, Evidence: "fixed", Duration: 1500 * time.Millisecond},
	}}
	s, xmlText := junitOf(t, rep)
	got := map[string]string{}
	for _, c := range s.Suites[0].Cases {
		switch {
		case c.Failure != nil:
			got[c.Name] = "failure: " + c.Failure.Message
		case c.Skipped != nil:
			got[c.Name] = "skipped: " + c.Skipped.Message
		default:
			got[c.Name] = "passed"
		}
	}
	want := map[string]string{
		"a": "passed",
		"b": "failure: b: broken",
		"c": "passed",
		"d": "skipped: no call",
		"e": "passed",
		"f": "failure: f: pass, but Expect says fail: update Expect (fixed)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JUnit outcomes mismatch (-want +got):\n%s\n%s", diff, xmlText)
	}
	if s.Failures != 2 || s.Skipped != 1 || s.Tests != 6 || s.Time != "3.000" || s.Suites[0].Cases[5].Time != "1.500" {
		t.Errorf("counts %d failures, %d skipped, %d tests, time %s (f: %s); want 2, 1, 6, 3.000 (1.500)", s.Failures, s.Skipped, s.Tests, s.Time, s.Suites[0].Cases[5].Time)
	}
}

// TestJUnitJunk checks that a diagnosis holding what XML cannot (control
// characters, invalid UTF-8, a CDATA end), or what a reader must not see
// raw (C1 controls U+009B and U+009D, the bidirectional override U+202E),
// still makes a document that parses, with that text escaped as the
// terminal output escapes it and the rest kept. The C1 controls and the
// override were kept raw.
func TestJUnitJunk(t *testing.T) {
	junk := "junk \x00\x1b[31m\xff]]> \u009b2J\u009d0;t\u0007 \u202eevil end"
	rep := &assertions.Report{Subject: "s\x01\u202e", Results: []assertions.Result{
		{Name: "a\u009b", Verdict: assertions.Fail, Evidence: junk, Details: junk},
		{Name: "b", Verdict: assertions.Skip, Evidence: junk},
	}}
	s, raw := junitOf(t, rep)
	c := s.Suites[0].Cases[0]
	want := `junk \x00\x1b[31m\xff]]> \x9b2J\x9d0;t\x07 \u202eevil end`
	if c.Failure == nil || c.Failure.Message != `a\x9b: `+want || !strings.Contains(c.SystemOut, "evidence: "+want+"\n") {
		t.Errorf("failure %+v, system-out %q; want the junk escaped, %q", c.Failure, c.SystemOut, want)
	}
	if sk := s.Suites[0].Cases[1].Skipped; sk == nil || sk.Message != want {
		t.Errorf("skipped %+v, want the junk escaped, %q", sk, want)
	}
	for _, r := range []string{"\u009b", "\u009d", "\u202e", "\x1b", "\x07"} {
		if strings.Contains(raw, r) {
			t.Errorf("the JUnit XML holds %q raw", r)
		}
	}
}
