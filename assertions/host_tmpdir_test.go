package assertions_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestCheckHostTmpdirKept: the host battery cannot make its directory in
// $TMPDIR (a regular file there; a path so deep that one more name does not
// fit) and says so, naming the directory and the cause, not the host; it
// removes nothing. Before, it fell back to $TMPDIR itself and removed it
// with everything in it. Not parallel: it sets TMPDIR.
func TestCheckHostTmpdirKept(t *testing.T) {
	for name, c := range tmpdirCases(t) {
		t.Run(name, func(t *testing.T) {
			t.Setenv("TMPDIR", c.tmpdir)
			started := false
			rep := assertions.CheckHost(t.Context(), func(context.Context, *exec.Cmd) (assertions.Host, error) {
				started = true
				return nil, errors.New("not started")
			}, assertions.HostConfig{Run: regexp.MustCompile("^under-limit$")})
			if len(rep.Results) != 1 || rep.Results[0].Verdict != assertions.Fail {
				t.Fatalf("want one failed result (the start), got %+v", rep.Results)
			}
			ev := rep.Results[0].Evidence
			short := truncate(ev)
			for _, s := range []string{"the harness could not make a directory for the fake's reports in the temporary directory " + c.tmpdir + " ($TMPDIR)", c.cause} {
				if !strings.Contains(ev, s) {
					t.Errorf("the evidence does not say %q: %s", truncate(s), short)
				}
			}
			if strings.Contains(ev, "the host did not start") || started {
				t.Errorf("the host was started (%v) or blamed: %s", started, short)
			}
			if b, err := os.ReadFile(c.keep); err != nil || string(b) != "the user's" {
				t.Errorf("the user's file %s: %q, %v; want it kept", c.keep, b, err)
			}
		})
	}
}

// truncate keeps a message with a 4 KB path in it readable.
func truncate(s string) string {
	return regexp.MustCompile(`(d{200}/)+`).ReplaceAllString(s, "…/")
}

// tmpdirCase is a $TMPDIR in which no directory can be made, and a file of
// the user's that must survive.
type tmpdirCase struct{ tmpdir, keep, cause string }

func tmpdirCases(t *testing.T) map[string]tmpdirCase {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tmpdir-is-a-file")
	// A directory whose path, 4080 bytes long, leaves no room for a
	// directory's name in it: that path fails with ENAMETOOLONG (PATH_MAX
	// is 4096 bytes on Linux); a file with a short name still fits.
	deep := t.TempDir()
	for len(deep) < 4080 {
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
	return map[string]tmpdirCase{
		"file":          {file, file, "not a directory"},
		"name-too-long": {deep, keep, "file name too long"},
	}
}
