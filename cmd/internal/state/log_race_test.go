//go:build unix

package state_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// TestLogPlantedLink: another user who can write the record's directory
// plants a symbolic link at the record's name, over and over, while
// records are created and rotated there: the link's target is never
// opened, truncated or written, whatever the timing (there is no window
// between a look and an open to plant it in).
func TestLogPlantedLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "precious")
	const keep = "keep me\n"
	if err := os.WriteFile(target, []byte(keep), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "rec.ndjson")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the other user
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if os.Symlink(target, path) == nil {
				if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					os.Remove(path)
				}
			}
		}
	}()
	header := []byte(`{"seq":0,"t":0,"ev":"header","header":{"v":1,"schema":"mcpstdio-proxy-record","part":0}}` + "\n")
	line := []byte(`{"seq":1,"t":1,"ev":"spawn","pid":1}` + "\n")
	deadline := time.Now().Add(2 * time.Second)
	opened, rotations := 0, 0
	for time.Now().Before(deadline) {
		l, err := state.CreateLog(path, int64(len(header)+len(line)), 1)
		if err != nil {
			continue // refused: the link was there
		}
		opened++
		l.Write(header)
		for range 20 {
			if _, err := l.Write(line); err == nil {
				rotations++
			}
		}
		l.Close()
		os.Remove(path)
	}
	close(stop)
	wg.Wait()
	b, err := os.ReadFile(target)
	fi, _ := os.Stat(target)
	if err != nil || !bytes.Equal(b, []byte(keep)) || fi.Mode().Perm() != 0o644 {
		t.Fatalf("the link's target holds %q, mode %v (%v): want %q, 0644, untouched (%d records opened, %d writes)", b, fi.Mode().Perm(), err, keep, opened, rotations)
	}
	t.Logf("%d records opened, %d writes with a rotation before each", opened, rotations)
	if opened == 0 {
		t.Skip(fmt.Sprint("no record could be opened in 2s: the race was not run"))
	}
}
