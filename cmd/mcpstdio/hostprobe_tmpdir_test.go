package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// TestHostProbeTmpdirKept: hostprobe cannot make its directory in $TMPDIR
// (a regular file there; a path so deep that a directory's name does not
// fit in it) and says so, naming the directory and the cause, not the host;
// it removes nothing and exits 1. Before, it fell back to $TMPDIR itself
// and removed it with everything in it.
func TestHostProbeTmpdirKept(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	file := filepath.Join(t.TempDir(), "tmpdir-is-a-file")
	deep := t.TempDir()
	for len(deep) < 4080 { // PATH_MAX is 4096 bytes on Linux
		deep = filepath.Join(deep, strings.Repeat("d", min(200, 4080-len(deep)-1)))
	}
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	keep := filepath.Join(deep, "keep")
	for _, f := range []string{file, keep} {
		if err := os.WriteFile(f, []byte("the user's"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	short := func(s string) string { return regexp.MustCompile(`(d{200}/)+`).ReplaceAllString(s, "…/") }
	for _, c := range []struct{ name, tmpdir, keep, cause string }{
		{"file", file, file, "not a directory"},
		{"name-too-long", deep, keep, "file name too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := resultOf(cmdtest.Run(t, time.Minute, []string{"TMPDIR=" + c.tmpdir}, nil, binary, "hostprobe", "-run", "^era-legacy$", "--", host, "{server}"))
			out := short(res.stdout + res.stderr)
			if res.code != 1 {
				t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, out, short(res.stderr))
			}
			for _, s := range []string{"the harness could not make a directory for the fake's reports in the temporary directory " + short(c.tmpdir) + " ($TMPDIR)", c.cause} {
				if !strings.Contains(out, s) {
					t.Errorf("the output does not say %q:\n%s", s, out)
				}
			}
			if strings.Contains(out, "the host did not start") {
				t.Errorf("the host is blamed:\n%s", out)
			}
			if b, err := os.ReadFile(c.keep); err != nil || string(b) != "the user's" {
				t.Errorf("the user's file %s: %q, %v; want it kept", short(c.keep), b, err)
			}
		})
	}
}
