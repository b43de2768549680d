package state

import (
	"encoding/json"
	"fmt"
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

// StatusEntry is a status file and what it holds.
type StatusEntry struct {
	Path   string
	Status Status
	Stale  bool  // not updated for Stale: the proxy is probably gone
	Err    error // the file could not be read
}

// ReadStatuses reads the status files in dir (files ending in
// StatusSuffix), newest first.
func ReadStatuses(dir string, now time.Time) ([]StatusEntry, error) {
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

// ReadStatus reads one status file.
func ReadStatus(path string, now time.Time) StatusEntry {
	e := StatusEntry{Path: path}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &e.Status)
	}
	if err != nil {
		e.Err = fmt.Errorf("state: status file %s: %w", path, err)
		return e
	}
	e.Stale = now.Sub(e.Status.Updated) > Stale
	return e
}
