package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// Status is what a status file holds: the proxy's live status and where
// its record is.
type Status struct {
	proxy.Status
	Log string `json:"log,omitempty"` // the record's file, "" when nothing is recorded
	// Problems are what the proxy could not do (a state directory, a
	// record it could not create), in words; the server ran regardless.
	Problems []string `json:"problems,omitempty"`
}

// WriteStatus rewrites the status file at path: a temporary file beside
// it, then a rename, so that a reader never sees half of one.
func WriteStatus(path string, st Status) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'))
}

// StatusSuffix ends the name of a status file.
const StatusSuffix = ".status.json"

// Stale is how old a status file's Updated may be before ReadStatuses
// calls the proxy gone (it was killed without removing its file).
const Stale = 10 * time.Second

// skew is how far in the future a status file's Updated may be (the
// wall clock stepped back) before ReadStatus calls the file invalid: a
// time further on would keep a planted file from ever going stale.
const skew = 5 * time.Second

// maxStatus bounds what ReadStatus reads of a status file.
const maxStatus = 16 << 20

// StatusEntry is a status file and what it holds.
type StatusEntry struct {
	Path   string
	Status Status
	Stale  bool  // not updated for Stale: the proxy is probably gone
	Err    error // the file could not be read
	// LogErr says why Status.Log must not be read (it is not a file in the
	// status file's own directory); nil when it may be, or there is none.
	LogErr error
}

// ReadStatuses reads the status files in dir (files ending in
// StatusSuffix), newest first. A dir that another user owns or can write
// to is refused (on Unix) with an error that names it and its owner.
func ReadStatuses(dir string, now time.Time) ([]StatusEntry, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []StatusEntry
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), StatusSuffix) || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		out = append(out, ReadStatus(filepath.Join(dir, e.Name()), now))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Status.Start.After(out[j].Status.Start) })
	return out, nil
}

// ReadStatus reads one status file. It is an error (on Unix) for the file
// to be a symbolic link, not to be this user's or to be writable by its
// group or others, and for its Updated to be further in the future than
// a small clock step. A Log that is not a file in the status file's own
// directory (symbolic links resolved) is not to be read: LogErr says
// why.
func ReadStatus(path string, now time.Time) StatusEntry {
	e := StatusEntry{Path: path}
	// Opened without following a link or waiting on a FIFO, then looked
	// at: what is read is what was checked.
	f, err := openNoFollow(path)
	var b []byte
	if err == nil {
		defer f.Close()
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file (%v)", fi.Mode().Type())
		}
		if err == nil {
			if err = checkOwned(path, fi); err != nil {
				e.Err = err
				return e
			}
		}
	}
	if err == nil {
		b, err = io.ReadAll(io.LimitReader(f, maxStatus+1))
	}
	if err == nil && len(b) > maxStatus {
		err = fmt.Errorf("over %d bytes: not a status file", maxStatus)
	}
	if err == nil {
		err = json.Unmarshal(b, &e.Status)
	}
	if err == nil && e.Status.Updated.Sub(now) > skew {
		err = fmt.Errorf("updated at %s, %s in the future: not trusting it", e.Status.Updated.Format(time.RFC3339), e.Status.Updated.Sub(now).Round(time.Second))
	}
	if err != nil {
		e.Err = fmt.Errorf("state: status file %s: %w", path, err)
		return e
	}
	e.Stale = now.Sub(e.Status.Updated) > Stale
	if log := e.Status.Log; log != "" {
		if err := inDir(log, filepath.Dir(path)); err != nil {
			e.LogErr = fmt.Errorf("the record %q is not read: %w", log, err)
		}
	}
	return e
}

// inDir returns an error unless path, an absolute path, names a file in
// dir once symbolic links are resolved.
func inDir(path, dir string) error {
	if !filepath.IsAbs(path) {
		return errors.New("not an absolute path")
	}
	rp, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(rd, rp); err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return fmt.Errorf("it is outside the status file's directory %s", rd)
	}
	return nil
}
