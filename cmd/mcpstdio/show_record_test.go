package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestShowNotARecord: show exits 2 with an error that says what is wrong
// for what is not a record (a directory, an empty file, a future schema,
// a line that is not JSON, /dev/zero), and 0 for a record cut in its last
// line (the proxy was killed), shown up to it with a warning.
func TestShowNotARecord(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile(sampleRecord)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct{ path, want string }{
		{t.TempDir(), "is a directory"},
		{write("empty", ""), "empty input: not a record"},
		{write("future", `{"seq":0,"ev":"header","header":{"v":99,"schema":"mcpstdio-proxy-record"}}`+"\n"), "not a record header of schema mcpstdio-proxy-record version"},
		{write("text", "hello, world\n"), "line 1: not a record header"},
		{write("junk", string(sample)+"not json\n"+string(sample)), "invalid character"},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct{ path, want string }{"/dev/zero", "not a record header"})
	}
	for _, c := range cases {
		r := mcpstdio(t, time.Minute, "show", c.path)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("show %s: exit %d, stdout %.80q, stderr %q; want 2 and %q", c.path, r.code, r.stdout, r.stderr, c.want)
		}
	}
	cut := write("cut", string(sample)+`{"seq":999,"t":1,"ev":"spa`)
	if r := mcpstdio(t, time.Minute, "show", cut); r.code != 0 || !strings.Contains(r.stderr, "no final newline") || !strings.Contains(r.stdout, "timeline") {
		t.Errorf("show of a record cut in its last line: exit %d, stderr %q; want 0, the record shown and a warning", r.code, r.stderr)
	}
}
