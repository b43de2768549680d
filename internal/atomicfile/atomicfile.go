// Package atomicfile writes a file so that a reader sees its old or its new
// content, never a mix: the status files of the proxy and the fake's report,
// which other processes read while they are rewritten. What is not a
// regular file (a device, a FIFO, a terminal, a link to one) is never
// replaced: Write refuses it, and WriteInPlace writes into it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrNotRegular is the error, wrapped, of Write for a path that is neither
// a regular file, nor a symbolic link to one, nor absent.
var ErrNotRegular = errors.New("not a regular file")

// Write writes b to a hidden temporary file beside path, created anew
// (O_EXCL), and renames it over path. A symbolic link is followed: the
// file it names is replaced, the link stays. On any error the temporary
// file is removed and path is unchanged. Write refuses, with an error
// wrapping ErrNotRegular, a path that exists and is not a regular file (or
// a link to one): renaming over /dev/null or a link to /proc/self/fd/2
// would replace the device or the link for every process; see
// WriteInPlace. A link to nothing is refused too.
func Write(path string, b []byte) error {
	target, err := Target(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Target returns the path Write renames over for path: path itself, or
// for a symbolic link the path of the regular file it names. It is an
// error wrapping ErrNotRegular for anything else that exists (a directory,
// a device, a FIFO, a socket, a link to one of those) and for a link to
// nothing (creating its target would create a file where the link
// points, wherever that is).
func Target(path string) (string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return path, nil
	}
	if err != nil {
		return "", err
	}
	target := path
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%s: a symbolic link to nothing: %w", path, ErrNotRegular)
			}
			return "", err
		}
		if fi, err = os.Stat(target); err != nil {
			return "", err
		}
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: %w (%v)", path, ErrNotRegular, fileType(fi))
	}
	return target, nil
}

func fileType(fi fs.FileInfo) string {
	switch t := fi.Mode().Type(); {
	case t&fs.ModeDir != 0:
		return "a directory"
	case t&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case t&fs.ModeSocket != 0:
		return "a socket"
	case t&fs.ModeCharDevice != 0:
		return "a character device"
	case t&fs.ModeDevice != 0:
		return "a device"
	}
	return fi.Mode().Type().String()
}

// inPlaceTimeout bounds a WriteInPlace to a FIFO or a terminal whose
// reader does not read.
const inPlaceTimeout = 10 * time.Second

// WriteInPlace writes b into the file at path as it is, following links:
// opened for writing without creating, truncating or replacing it (a
// device, a FIFO, a terminal, /dev/stderr). Opening does not wait for a
// FIFO's reader (none is an error), and the write gives up after 10
// seconds where the file can say (a pipe or a terminal whose reader does
// not read). A directory is refused.
func WriteInPlace(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Errorf("%s: a directory", path)
	}
	f.SetWriteDeadline(time.Now().Add(inPlaceTimeout)) // ErrNoDeadline where the file cannot wait: it blocks as a file does
	_, err = f.Write(b)
	return err
}
