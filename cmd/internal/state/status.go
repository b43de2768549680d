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
	// ProcStart is the proxy's process start time in clock ticks after
	// boot (Linux; see SelfStart), so that ReadStatus can tell the proxy
	// from a later process the kernel gave its pid; 0 where unknown.
	ProcStart uint64 `json:"proc_start,omitempty"`
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

// Stale is how old a status file's Updated may be before ReadStatus
// calls the proxy gone where it cannot tell from the proxy's process (not
// Linux, not Unix, or a file without ProcStart); where it can, a proxy
// that runs and has not updated its file for Stale is Quiet.
const Stale = 10 * time.Second

// KeepStale is how long after its last update RemoveStale keeps the status
// file of a proxy that is gone, so that `mcpstdio status -all` can show
// what it last saw and where its record is.
const KeepStale = 24 * time.Hour

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
	// Stale: the proxy has ended without removing its file (it was
	// killed). Its process is gone (Unix: no process has its pid; Linux:
	// nor is the process with its pid the one that wrote the file), or,
	// where that cannot be told, the file was not updated for Stale.
	Stale bool
	// Quiet is how long a proxy that still runs has not updated its file,
	// once that is over Stale (it is stopped, or cannot write the file);
	// 0 otherwise. Stopped: it is stopped (SIGSTOP; Linux).
	Quiet   time.Duration
	Stopped bool
	Gone    bool  // the proxy's process is known to have ended (Stale is set too)
	Err     error // the file could not be read
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
	age := now.Sub(e.Status.Updated)
	if gone, known := proxyGone(e.Status); known {
		e.Stale, e.Gone = gone, gone
	} else {
		e.Stale = age > Stale
	}
	if !e.Stale && age > Stale {
		e.Quiet, e.Stopped = age, proxyStopped(e.Status)
	}
	if log := e.Status.Log; log != "" {
		if err := inDir(log, filepath.Dir(path)); err != nil {
			e.LogErr = fmt.Errorf("the record %q is not read: %w", log, err)
		}
	}
	return e
}

// inDir returns an error unless path, an absolute path, names a file in
// dir (absolute, or relative to the working directory) once symbolic
// links are resolved.
func inDir(path, dir string) error {
	if !filepath.IsAbs(path) {
		return errors.New("not an absolute path")
	}
	rp, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	rd, err := filepath.EvalSymlinks(ad)
	if err != nil {
		return err
	}
	if rel, err := filepath.Rel(rd, rp); err != nil || rel == "." || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
		return fmt.Errorf("it is outside the status file's directory %s", rd)
	}
	return nil
}

// RemoveStale removes the status files among ents (read from dir by
// ReadStatuses at now) of proxies known to be gone (their process ended,
// not merely quiet) and last updated over KeepStale before now, and the
// temporary files of status files in dir older than a minute (a proxy
// killed while it rewrote its status file leaves one). It returns what it
// removed.
func RemoveStale(dir string, ents []StatusEntry, now time.Time) []string {
	var removed []string
	for _, e := range ents {
		if e.Err == nil && e.Gone && now.Sub(e.Status.Updated) > KeepStale && filepath.Dir(e.Path) == filepath.Clean(dir) {
			if os.Remove(e.Path) == nil {
				removed = append(removed, e.Path)
			}
		}
	}
	des, err := os.ReadDir(dir)
	if err != nil {
		return removed
	}
	for _, de := range des {
		name := de.Name()
		if !strings.HasPrefix(name, ".") || !strings.Contains(name, StatusSuffix+".") || !de.Type().IsRegular() {
			continue
		}
		if fi, err := de.Info(); err == nil && now.Sub(fi.ModTime()) > time.Minute {
			if os.Remove(filepath.Join(dir, name)) == nil {
				removed = append(removed, filepath.Join(dir, name))
			}
		}
	}
	return removed
}
