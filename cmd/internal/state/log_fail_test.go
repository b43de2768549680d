//go:build unix

package state_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// TestLogWriteFailsCutBack: a write that fails half-way (the file size
// limit, as a full disk would) is cut back to the last whole line, and a
// later, shorter write goes in after it: the file is whole lines.
func TestLogWriteFailsCutBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.ndjson")
	l, err := state.CreateLog(path, -1, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	header := []byte(`{"seq":0,"t":0,"ev":"header"}` + "\n")
	if _, err := l.Write(header); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Skip("no RLIMIT_FSIZE here:", err)
	}
	// This process may write no file past 4 KiB until the limit is
	// restored (the package's tests do not run in parallel).
	small := lim
	small.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Skip("cannot lower RLIMIT_FSIZE:", err)
	}
	big := bytes.Repeat([]byte(`{"seq":1,"t":1,"ev":"frame","head":"xxxxxxxxxxxxxxxx"}`+"\n"), 200)
	_, werr := l.Write(big)
	end := []byte(`{"seq":2,"t":2,"ev":"cut","err":"file too large"}` + "\n")
	_, eerr := l.Write(end)
	syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim)
	if werr == nil || !strings.Contains(werr.Error(), "file too large") {
		t.Fatalf("a write past the file size limit: %v, want it to fail", werr)
	}
	if eerr != nil {
		t.Errorf("the write after a failed one: %v, want it written after the last whole line", eerr)
	}
	b, _ := os.ReadFile(path)
	if want := string(header) + string(end); string(b) != want {
		t.Errorf("the file holds %d bytes:\n%.300q\nwant the header and the last line only:\n%q", len(b), b, want)
	}
}

// TestLogRotationRefused: a rotation that cannot be done (here NAME.1 is a
// directory that cannot be replaced; a read-only directory does the same
// to a user who is not root) leaves the record going on in the open file,
// says why, and is tried again after the size limit once more.
func TestLogRotationRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.ndjson")
	blocker := path + ".1"
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := state.CreateLog(path, 200, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	header := []byte(`{"seq":0,"t":0,"ev":"header","header":{"part":0}}` + "\n")
	line := []byte(`{"seq":1,"t":1,"ev":"spawn","pid":12345678}` + "\n") // 44 bytes
	l.Write(header)
	for range 6 {
		if _, err := l.Write(line); err != nil {
			t.Fatalf("a write after a refused rotation: %v, want it written", err)
		}
	}
	if p := l.Problem(); !strings.Contains(p, "could not be rotated") {
		t.Errorf("Problem() = %q, want it to say the rotation failed", p)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, append(header, bytes.Repeat(line, 6)...)) {
		t.Errorf("the record holds %q, want every line in the open file", b)
	}
	os.RemoveAll(blocker)
	for range 6 {
		l.Write(line)
	}
	if _, err := os.Stat(blocker); err != nil || l.Problem() != "" {
		t.Errorf("after the directory was freed: %s: %v, problem %q; want a rotation and no problem", blocker, err, l.Problem())
	}
}
