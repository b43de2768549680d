package atomicfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
)

// TestDescriptorLinkAppends (Linux): a path that reaches a regular file
// through an open descriptor's name, as /dev/stderr does for a stderr
// redirected with 2>>log, is not a file to replace: Write refuses it, and
// WriteInPlace appends to the file, which keeps what it held, its inode
// and its mode (the fake's -report /dev/stderr replaced the log with a new
// 0600 file, its earlier lines lost).
func TestDescriptorLinkAppends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "err.log")
	if err := os.WriteFile(log, []byte("earlier line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	before, _ := os.Stat(log)
	fdName := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	stderrLike := filepath.Join(dir, "stderr") // as /dev/stderr -> /proc/self/fd/2
	if err := os.Symlink(fdName, stderrLike); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fdName, stderrLike} {
		if err := atomicfile.Write(p, []byte("report\n")); !errors.Is(err, atomicfile.ErrNotRegular) {
			t.Errorf("Write(%s) = %v, want ErrNotRegular: it names a descriptor", p, err)
		}
		if err := atomicfile.WriteInPlace(p, []byte("report\n")); err != nil {
			t.Errorf("WriteInPlace(%s) = %v", p, err)
		}
	}
	got, _ := os.ReadFile(log)
	if want := "earlier line\nreport\nreport\n"; string(got) != want {
		t.Errorf("the log holds %q, want %q", got, want)
	}
	after, _ := os.Stat(log)
	if !os.SameFile(before, after) || after.Mode().Perm() != 0o644 {
		t.Errorf("the log was replaced or its mode changed: %v -> %v", before.Mode(), after.Mode())
	}
}

// TestWriteKeepsModeAndOwner: a file Write replaces keeps its permission
// bits and, written by root, its owner and group (root writing through a
// user's link made the user's 0644 file a root-owned 0600 one); a file it
// creates is 0600.
func TestWriteKeepsModeAndOwner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "rep.json")
	if err := atomicfile.Write(p, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Errorf("a new file is %v, want 0600", fi.Mode().Perm())
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	owned := os.Geteuid() == 0
	if owned {
		if err := os.Chown(p, 1000, 1000); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(link, []byte("2")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("the replaced file is %v, want 0644 as it was", fi.Mode().Perm())
	}
	if st := fi.Sys().(*syscall.Stat_t); owned && (st.Uid != 1000 || st.Gid != 1000) {
		t.Errorf("the replaced file is owned by %d:%d, want 1000:1000 as it was", st.Uid, st.Gid)
	}
	if b, _ := os.ReadFile(p); string(b) != "2" {
		t.Errorf("the file holds %q, want the new content", b)
	}
}
