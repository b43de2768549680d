//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// TestFakeReportNotReplacingALink: `fake -report LINK`, LINK a symbolic
// link to /dev/stderr (the trial used /dev/stderr itself, and as root
// /dev/null), leaves the link as it is and writes the report through it,
// once, at the end: renaming a temporary file over it destroyed it, and
// nothing reached stderr.
func TestFakeReportNotReplacingALink(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "stderr")
	if err := os.Symlink("/dev/stderr", link); err != nil {
		t.Fatal(err)
	}
	r := cmdtest.Run(t, cmdtest.Bound(t), nil, strings.NewReader(""), binary, "fake", "-report", link)
	if r.Code != 0 || strings.Count(r.Stderr, `"Exit": "stdin EOF"`) != 1 {
		t.Errorf("fake -report %s: exit %d, stderr %q; want the report on stderr once", link, r.Code, r.Stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("after fake -report: %s is %v (%v), want the link kept", link, fi.Mode(), err)
	}
}
