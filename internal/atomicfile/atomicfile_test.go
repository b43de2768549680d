package atomicfile_test

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, want := range []string{"old", "new"} {
		if err := atomicfile.Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only f.json (no temporary left)", len(ents))
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("Write into a missing directory: no error")
	}
}

func Example() {
	path := filepath.Join(os.TempDir(), "atomicfile-example.json")
	defer os.Remove(path)
	if err := atomicfile.Write(path, []byte(`{"ok":true}`)); err != nil {
		fmt.Println(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Println(string(b))
	// Output: {"ok":true}
}

// TestNeverReplacesWhatIsNotAFile: a symbolic link to a regular file stays
// a link (the file it names is replaced); a FIFO, a link to one, a link to
// nothing and a directory are refused with ErrNotRegular and left as they
// are (renaming over them replaced the FIFO, or the link, with a regular
// file: as root, -report /dev/null replaced the device).
func TestNeverReplacesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	file, link := filepath.Join(dir, "f.json"), filepath.Join(dir, "link")
	if err := os.WriteFile(file, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("after Write through a link: %v, %v; want the link kept", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(file); string(b) != "new" {
		t.Errorf("the linked file holds %q, want %q", b, "new")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	toFifo, toNothing, sub := filepath.Join(dir, "to-fifo"), filepath.Join(dir, "to-nothing"), filepath.Join(dir, "sub")
	os.Symlink(fifo, toFifo)
	os.Symlink(filepath.Join(dir, "none"), toNothing)
	os.Mkdir(sub, 0o700)
	for _, c := range []struct {
		path string
		mode fs.FileMode // what Lstat must still say
	}{{fifo, fs.ModeNamedPipe}, {toFifo, fs.ModeSymlink}, {toNothing, fs.ModeSymlink}, {sub, fs.ModeDir}} {
		if err := atomicfile.Write(c.path, []byte("x")); !errors.Is(err, atomicfile.ErrNotRegular) {
			t.Errorf("Write(%s) = %v, want ErrNotRegular", c.path, err)
		}
		if fi, err := os.Lstat(c.path); err != nil || fi.Mode().Type() != c.mode {
			t.Errorf("%s after Write: %v, %v; want it left a %v", c.path, fi.Mode(), err, c.mode)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Errorf("Write through a link to nothing created its target")
	}
	// In place: a FIFO with no reader is an error at once; with one, it
	// gets the bytes.
	if err := atomicfile.WriteInPlace(fifo, []byte("x")); err == nil {
		t.Errorf("WriteInPlace to a FIFO with no reader: no error")
	}
	got := make(chan string, 1)
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := atomicfile.WriteInPlace(toFifo, []byte("report\n")); err != nil {
		t.Fatalf("WriteInPlace through a link to a FIFO with a reader: %v", err)
	}
	go func() { b, _ := io.ReadAll(r); got <- string(b) }()
	if s := <-got; s != "report\n" {
		t.Errorf("the FIFO's reader got %q", s)
	}
	if err := atomicfile.WriteInPlace(sub, []byte("x")); err == nil {
		t.Errorf("WriteInPlace to a directory: no error")
	}
}
