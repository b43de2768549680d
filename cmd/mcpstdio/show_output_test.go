package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShowHTMLRefusesItsInput: `show -html OUT RECORD` with OUT the record
// itself, a symbolic or hard link to it, or one of its rotated files is
// refused, and the record is left as it was (it was overwritten with the
// report, exit 0); a new file gets the report.
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
	for _, out := range []string{rec, sym, hard, rotated} {
		r := mcpstdio(t, time.Minute, "show", "-html", out, rec)
		if r.code == 0 || !strings.Contains(r.stderr, "which the report is made from") {
			t.Errorf("show -html %s %s: exit %d, stderr %q; want it refused", filepath.Base(out), filepath.Base(rec), r.code, r.stderr)
		}
		for _, p := range []string{rec, rotated} {
			if b, _ := os.ReadFile(p); !bytes.Equal(b, sample) {
				t.Fatalf("show -html %s: %s changed", filepath.Base(out), filepath.Base(p))
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
