package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var sampleRecord = filepath.Join("..", "internal", "page", "testdata", "sample.ndjson")

// TestShowCommand: show prints the summary, -json the session, -html a
// report file; usage errors exit 2, an unreadable record 1.
func TestShowCommand(t *testing.T) {
	t.Parallel()
	out := mcpstdio(t, time.Minute, "show", sampleRecord)
	for _, want := range []string{"server  ./myserver --stdio\n", "\nverdicts\n  - ", "\nmetrics\n", "\npending at the end\n  none\n", "\nlost detail\n", "\ntimeline\n", "CANCEL cancel of id 3", "LATE id 3"} {
		if out.code != 0 || !strings.Contains(out.stdout, want) {
			t.Errorf("show: exit %d, stdout lacks %q:\n%s%s", out.code, want, out.stdout, out.stderr)
		}
	}
	js := mcpstdio(t, time.Minute, "show", "-json", sampleRecord)
	var s struct {
		Requests []struct{ State string }
		Blocks   []struct{ Since, End int64 }
	}
	if err := json.Unmarshal([]byte(js.stdout), &s); js.code != 0 || err != nil || len(s.Requests) != 3 || len(s.Blocks) != 1 {
		t.Errorf("show -json: exit %d, %v: %+v", js.code, err, s)
	}
	html := filepath.Join(t.TempDir(), "r.html")
	if h := mcpstdio(t, time.Minute, "show", "-html", html, sampleRecord); h.code != 0 || h.stdout != "" {
		t.Errorf("show -html: exit %d, stdout %q, stderr %q", h.code, h.stdout, h.stderr)
	}
	if b, err := os.ReadFile(html); err != nil || !strings.Contains(string(b), "<svg") || !strings.HasPrefix(string(b), "<!doctype html>") {
		t.Errorf("show -html wrote %.100q, %v", b, err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"show"}, 2, "want one record file"},
		{[]string{"show", "a", "b"}, 2, "want one record file"},
		{[]string{"show", "-bogus", sampleRecord}, 2, "flag provided but not defined"},
		{[]string{"show", filepath.Join(t.TempDir(), "none.ndjson")}, 1, "no such file"},
		{[]string{"show", "-h"}, 0, "usage: mcpstdio show"},
	} {
		r := mcpstdio(t, time.Minute, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("mcpstdio %q: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.msg)
		}
	}
}
