package proxy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Default bounds of a LogFile.
const (
	DefaultLogMax  = 64 << 20 // bytes per file before it is rotated
	DefaultLogKeep = 3        // rotated files kept besides the current one
)

// LogFile is a record on disk: a file created 0600 (its directory, if it
// has to be made, 0700), written with one write(2) per event and never
// buffered, so that everything up to the last event survives the proxy
// being killed (but not the machine failing: it is not fsynced).
//
// When a write would take the file past Max bytes, the file is rotated
// first: NAME.1 becomes NAME.2 and so on, NAME becomes NAME.1, the oldest
// beyond Keep is removed, and a new NAME starts with a copy of the header
// line (Part counts up), so each file can be read alone. A LogFile is safe
// for concurrent use; every Write must be exactly one event line.
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

// CreateLog creates the record file path (truncating an existing one),
// with permissions 0600, making its directory with 0700 if it does not
// exist. max is the rotation size in bytes (0: DefaultLogMax; below 0: no
// rotation) and keep the number of rotated files kept (0: DefaultLogKeep).
func CreateLog(path string, max int64, keep int) (*LogFile, error) {
	if max == 0 {
		max = DefaultLogMax
	}
	if keep <= 0 {
		keep = DefaultLogKeep
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("proxy: record directory: %w", err)
	}
	l := &LogFile{path: path, max: max, keep: keep}
	f, err := openPrivate(path)
	if err != nil {
		return nil, err
	}
	l.f = f
	return l, nil
}

// openPrivate creates or truncates path with mode 0600, also when it
// already existed with a wider mode.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("proxy: record: %w", err)
	}
	if runtime.GOOS != "windows" {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, fmt.Errorf("proxy: record: %w", err)
		}
	}
	return f, nil
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
		return 0, fmt.Errorf("proxy: record %s: closed", l.path)
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
		l.err = fmt.Errorf("proxy: record %s: %w", l.path, err)
	}
	return n, l.err
}

// rotate shifts the files and starts a new one with the header.
func (l *LogFile) rotate() error {
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("proxy: record %s: %w", l.path, err)
	}
	l.f = nil
	_ = os.Remove(fmt.Sprintf("%s.%d", l.path, l.keep))
	for i := l.keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("proxy: rotating the record: %w", err)
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
		return fmt.Errorf("proxy: record %s: %w", l.path, err)
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

// EnvStateDir is the environment variable that, when set, names the
// directory DefaultDir returns.
const EnvStateDir = "MCPSTDIO_STATE_DIR"

// DefaultDir returns the per-user directory where the proxy keeps records
// and status files unless told otherwise; never the working directory:
//
//   - $MCPSTDIO_STATE_DIR, if set;
//   - Linux and other Unix: $XDG_STATE_HOME/mcpstdio, else ~/.local/state/mcpstdio;
//   - macOS: ~/Library/Logs/mcpstdio;
//   - Windows: %LocalAppData%\mcpstdio.
//
// It does not create the directory.
func DefaultDir() (string, error) {
	if d := os.Getenv(EnvStateDir); d != "" {
		return d, nil
	}
	switch runtime.GOOS {
	case "windows":
		d, err := os.UserCacheDir() // %LocalAppData%
		if err != nil {
			return "", fmt.Errorf("proxy: no per-user directory: %w", err)
		}
		return filepath.Join(d, "mcpstdio"), nil
	case "darwin", "ios":
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("proxy: no per-user directory: %w", err)
		}
		return filepath.Join(home, "Library", "Logs", "mcpstdio"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "mcpstdio"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("proxy: no per-user directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "mcpstdio"), nil
}

// PrivateDir makes dir (and its parents) if needed, and makes sure dir
// itself is 0700 (on Unix), so that records of other users' sessions are
// not readable by anyone else.
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("proxy: making %s private: %w", dir, err)
		}
	}
	return nil
}

// SessionLogName returns the file name of a new session's record: the
// time, the proxy's pid and the server command's base name, e.g.
// "20260105-142233.123-4711-node.ndjson".
func SessionLogName(start time.Time, pid int, command string) string {
	base := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, filepath.Base(command))
	if len(base) > 40 {
		base = base[:40]
	}
	return fmt.Sprintf("%s-%d-%s.ndjson", start.Format("20060102-150405.000"), pid, base)
}
