package state

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
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
// first: a new file is made under a name no one else can have made, and
// gets a copy of the header line (Part counts up), so each file can be read
// alone; then NAME.1 becomes NAME.2 and so on, NAME becomes NAME.1, the
// oldest beyond Keep is removed, and the new file takes NAME. A rotation
// that fails (a directory that became read-only, say) changes nothing: the
// record goes on in the open file, Problem says why, and the next rotation
// is tried after Max bytes more.
//
// A Write that fails is cut back: the file ends with the last whole line
// before it, and a later Write tries again (the proxy writes one last
// event saying why the record ends there). A LogFile is safe for
// concurrent use; every Write must be whole event lines, the first one the
// header alone.
type LogFile struct {
	path string
	max  int64
	keep int

	mu         sync.Mutex
	f          *os.File
	size       int64
	nextRotate int64  // the size past which a rotation is tried
	header     []byte // the first line written, repeated at the top of each new file
	part       int
	err        error  // the file can no longer be written whole: every Write fails with it
	problem    string // why the last rotation failed, "" if none did
}

// CreateLog creates the record file path with permissions 0600, making
// its directory with 0700 if it does not exist. An existing record is
// truncated; a symbolic link, a file that is not regular or a file that is
// not a record is refused with an error that says so, and a name that
// someone else turns into one while it is opened is never followed or
// truncated. max is the rotation size in bytes (0: DefaultLogMax; below
// 0: no rotation) and keep the number of rotated files kept (0:
// DefaultLogKeep).
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
	l := &LogFile{path: path, max: max, keep: keep, nextRotate: max}
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
// must not destroy it. There is no look before the open that another user
// who can write the directory could race: a new file is created with
// O_EXCL (which fails on whatever is there, a link included), and an
// existing one is opened with O_NOFOLLOW (and O_NONBLOCK, for a FIFO),
// then checked through the descriptor.
func openPrivate(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err == nil {
		return f, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("state: record: %w", err)
	}
	f, err = os.OpenFile(path, os.O_RDWR|oNoFollow|oNonBlock, 0)
	if err != nil {
		if isLoop(err) {
			return nil, fmt.Errorf("state: record %s is a symbolic link: not following it", path)
		}
		if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() { // for the message only
			return nil, fmt.Errorf("state: record %s is not a regular file (%v)", path, fi.Mode().Type())
		}
		return nil, fmt.Errorf("state: record: %w", err)
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case fi.Mode()&fs.ModeSymlink != 0:
		err = fmt.Errorf("record %s is a symbolic link: not following it", path)
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("record %s is not a regular file (%v)", path, fi.Mode().Type())
	case fi.Size() > 0 && !isRecord(f):
		err = fmt.Errorf("%s exists and is not a record: not overwriting it", path)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil && runtime.GOOS != "windows" {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("state: %w", err)
	}
	return f, nil
}

// isRecord reports whether f starts as a record does.
func isRecord(f *os.File) bool {
	b := make([]byte, 9)
	n, _ := f.ReadAt(b, 0)
	return string(b[:n]) == `{"seq":0,`
}

// Path returns the file's name.
func (l *LogFile) Path() string { return l.path }

// Problem says why the last rotation failed ("" if none did): the record
// goes on in the open file, past the size limit.
func (l *LogFile) Problem() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.problem
}

// Write writes whole event lines, rotating first if they would take the
// file past the size limit. A failed write is cut back to the last whole
// line before it, and the error returned; if even that fails, every later
// Write fails with the same error.
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
	} else if l.max > 0 && l.size > 0 && l.size+int64(len(p)) > l.nextRotate {
		if err := l.rotate(); err != nil {
			l.problem = fmt.Sprintf("the record could not be rotated (%v): it goes on in %s past %d bytes", strings.TrimPrefix(err.Error(), "state: "), l.path, l.max)
			l.nextRotate = l.size + l.max
		} else {
			l.problem, l.nextRotate = "", l.max
		}
	}
	n, err := l.f.Write(p)
	if err == nil {
		l.size += int64(n)
		return n, nil
	}
	err = fmt.Errorf("state: record %s: %w", l.path, err)
	if n > 0 {
		if terr := l.f.Truncate(l.size); terr != nil {
			l.err = fmt.Errorf("%w; cutting it back to its last whole line: %v", err, terr)
			return 0, l.err
		}
		if _, serr := l.f.Seek(l.size, io.SeekStart); serr != nil {
			l.err = fmt.Errorf("%w; cutting it back to its last whole line: %v", err, serr)
			return 0, l.err
		}
	}
	return 0, err
}

// rotate starts a new file: made under a hidden name with O_EXCL (a
// random name no one can have planted), given the header, and renamed to
// the record's name once the old files have moved up, which replaces
// whatever is at that name without following it. Until the last rename
// nothing of the record changes, so a failure leaves the open file in use.
func (l *LogFile) rotate() error {
	dir := filepath.Dir(l.path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(l.path)+".*")
	if err != nil {
		return err
	}
	fail := func(err error) error {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	h := bytes.Replace(l.header, []byte(`"part":0`), fmt.Appendf(nil, `"part":%d`, l.part+1), 1)
	if _, err := tmp.Write(h); err != nil {
		return fail(err)
	}
	windows := runtime.GOOS == "windows"
	if windows {
		// A file open here cannot be renamed: both are closed, and the
		// record's name opened again at the end.
		tmp.Close()
		l.f.Close()
	}
	_ = os.Remove(fmt.Sprintf("%s.%d", l.path, l.keep))
	for i := l.keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", l.path, i), fmt.Sprintf("%s.%d", l.path, i+1))
	}
	err = os.Rename(l.path, l.path+".1")
	if err == nil {
		if err = os.Rename(tmp.Name(), l.path); err != nil {
			// The open file is NAME.1 now: put it back, and go on in it.
			_ = os.Rename(l.path+".1", l.path)
		}
	}
	if err != nil {
		if windows {
			l.reopen()
		}
		return fail(err)
	}
	l.part++
	l.size = int64(len(h))
	if windows {
		l.reopen()
		return l.err
	}
	l.f.Close()
	l.f = tmp
	return nil
}

// reopen opens the record's name again for appending (Windows, where the
// file had to be closed to be renamed).
func (l *LogFile) reopen() {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|oNoFollow, 0)
	if err != nil {
		l.err = fmt.Errorf("state: record %s: opening it again after a rotation: %w", l.path, err)
		l.f = nil
		return
	}
	l.f = f
	if fi, err := f.Stat(); err == nil {
		l.size = fi.Size()
	}
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
