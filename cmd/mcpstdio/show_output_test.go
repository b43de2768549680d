package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShowHTMLRefusesItsInput: `show -html OUT RECORD` and `replay -record
// RECORD -save OUT` with OUT the record itself, a symbolic or hard link to
// it, or one of its rotated files are refused, and the record is left as
// it was (show overwrote it with the report, replay -save with the whole
// session, exit 0); a new file gets the report.
func TestShowHTMLRefusesItsInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sample, err := os.ReadFile(sampleRecord)
	if err != nil {
		t.Fatal(err)
	}
	rec, rotated := filepath.Join(dir, "r.ndjson"), filepath.Join(dir, "r.ndjson.1")
	for _, p := range []string{rec, rotated} {
		if err := os.WriteFile(p, sample, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	sym, hard := filepath.Join(dir, "sym.html"), filepath.Join(dir, "hard.html")
	if err := os.Symlink(rec, sym); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(rec, hard); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	// r.ndjson.2 does not exist: made, it would be read as the record's oldest part.
	for _, out := range []string{rec, sym, hard, rotated, rec + ".2"} {
		for _, args := range [][]string{{"show", "-html", out, rec}, {"replay", "-record", rec, "-save", out}} {
			r := mcpstdio(t, time.Minute, args...)
			if r.code == 0 || !strings.Contains(r.stderr, "which the output is made from") {
				t.Errorf("%s %s: exit %d, stderr %q; want it refused", args[0], strings.Join(args[1:], " "), r.code, r.stderr)
			}
			for _, p := range []string{rec, rotated} {
				if b, _ := os.ReadFile(p); !bytes.Equal(b, sample) {
					t.Fatalf("%s %s: %s changed", args[0], strings.Join(args[1:], " "), filepath.Base(p))
				}
			}
			if _, err := os.Stat(rec + ".2"); err == nil {
				t.Fatalf("%s %s: made %s", args[0], strings.Join(args[1:], " "), filepath.Base(rec+".2"))
			}
		}
	}
	out := filepath.Join(dir, "report.html")
	if r := mcpstdio(t, time.Minute, "show", "-html", out, rec); r.code != 0 {
		t.Errorf("show -html to a new file: exit %d, %s", r.code, r.stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.HasPrefix(b, []byte("<!doctype html>")) {
		t.Errorf("the report: %.40q, %v", b, err)
	}
}
