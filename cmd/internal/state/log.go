package state

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// Default bounds of a LogFile.
const (
	DefaultLogMax  = 64 << 20 // bytes per file before it is rotated
	DefaultLogKeep = 3        // rotated files kept besides the current one
)

// LogFile is a record on disk: a file created 0600 (its directory, if it
// has to be made, 0700), written with one write(2) per Write (the proxy
// writes each batch of events with one) and never buffered, so that
// everything up to the last batch survives the proxy being killed (but
// not the machine failing: it is not fsynced).
//
// When a write would take the file past Max bytes, the file is rotated
// first: NAME.1 becomes NAME.2 and so on, NAME becomes NAME.1, the oldest
// beyond Keep is removed, and a new NAME starts with a copy of the header
// line (Part counts up), so each file can be read alone. A LogFile is safe
// for concurrent use; every Write must be whole event lines, the first one
// the header alone.
type LogFile struct {
	path string
	max  int64
	keep int

	mu     sync.Mutex
	f      *os.File
	size   int64
	header []byte // the first line written, repeated at the top of each new file
	part   int
	err    error
}

// CreateLog creates the record file path with permissions 0600, making
// its directory with 0700 if it does not exist. An existing record is
// truncated; a symbolic link, a file that is not regular or a file that is
// not a record is refused with an error that says so. max is the rotation size in bytes (0: DefaultLogMax; below 0: no
// rotation) and keep the number of rotated files kept (0: DefaultLogKeep).
func CreateLog(path string, max int64, keep int) (*LogFile, error) {
	if max == 0 {
		max = DefaultLogMax
	}
	if keep <= 0 {
		keep = DefaultLogKeep
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state: record directory: %w", err)
	}
	l := &LogFile{path: path, max: max, keep: keep}
	f, err := openPrivate(path)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// openPrivate creates path with mode 0600, or truncates it if it is a
// record already (a regular file whose first line is a record header, or
// an empty one), narrowing a wider mode. It never follows a symbolic link
// and never truncates anything else: a -log pointing at the wrong file
// must not destroy it.
func openPrivate(path string) (*os.File, error) {
	before, err := os.Lstat(path)
	switch {
	case err == nil && before.Mode()&os.ModeSymlink != 0:
		return nil, fmt.Errorf("state: record %s is a symbolic link: not following it", path)
	case err == nil && !before.Mode().IsRegular():
		return nil, fmt.Errorf("state: record %s is not a regular file (%v)", path, before.Mode().Type())
	case err == nil && before.Size() > 0 && !isRecord(path):
		return nil, fmt.Errorf("state: %s exists and is not a record: not overwriting it", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state: record: %w", err)
	}
	// The name may have changed between the look and the open: check that
	// the file opened is a regular file, and the one looked at.
	fi, err := f.Stat()
	if err == nil && (!fi.Mode().IsRegular() || (before != nil && !os.SameFile(before, fi))) {
		err = fmt.Errorf("%s changed while it was opened", path)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil && runtime.GOOS != "windows" {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state: record: %w", err)
	}
	return f, nil
}

// isRecord reports whether the file at path starts as a record does.
func isRecord(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b := make([]byte, 9)
	n, _ := io.ReadFull(f, b)
	return string(b[:n]) == `{"seq":0,`
}

// Path returns the file's name.
func (l *LogFile) Path() string { return l.path }

// Write writes one event line, rotating first if it would pass the size
// limit. After a failure every later Write fails with the same error.
func (l *LogFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if l.f == nil {
		return 0, fmt.Errorf("state: record %s: closed", l.path)
	}
	if l.header == nil {
		l.header = bytes.Clone(p)
	} else if l.max > 0 && l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			l.err = err
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	if err != nil {
		l.err = fmt.Errorf("state: record %s: %w", l.path, err)
	}
	return n, l.err
}

// rotate shifts the files and starts a new one with the header.
func (l *LogFile) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("state: record %s: %w", l.path, err)
	}
	l.f = nil
	_ = os.Remove(fmt.Sprintf("%s.%d", l.path, l.keep))
	for i := l.keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("state: rotating the record: %w", err)
	}
	f, err := openPrivate(l.path)
	if err != nil {
		return err
	}
	l.f, l.size = f, 0
	l.part++
	h := bytes.Replace(l.header, []byte(`"part":0`), fmt.Appendf(nil, `"part":%d`, l.part), 1)
	n, err := l.f.Write(h)
	l.size += int64(n)
	if err != nil {
		return fmt.Errorf("state: record %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file. It is safe to call more than once.
func (l *LogFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
