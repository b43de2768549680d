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
	"strings"
	"syscall"
	"time"
)

// ErrNotRegular is the error, wrapped, of Write for a path that is neither
// a regular file, nor a symbolic link to one, nor absent.
var ErrNotRegular = errors.New("not a regular file")

// Write writes b to a hidden temporary file beside path, created anew
// (O_EXCL, mode 0600), and renames it over path. A symbolic link is
// followed: the file it names is replaced, the link stays. A file replaced
// keeps its permission bits and, where the process may set them (root),
// its owner and group: as the shell's ">" leaves them. On any error the
// temporary file is removed and path is unchanged. Write refuses, with an
// error wrapping ErrNotRegular, a path that exists and is not a regular
// file (or a link to one): renaming over /dev/null or a link to
// /proc/self/fd/2 would replace the device or the link for every process;
// see WriteInPlace. A link through an open descriptor's name
// (/proc/PID/fd/N, /dev/fd/N: /dev/stderr is one) is refused too, even to
// a regular file: it names a stream the process writes to (2>>log), not
// a file to replace; and so is a link to nothing.
func Write(path string, b []byte) error {
	target, err := Target(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".*")
	if err != nil {
		return err
	}
	if old, serr := os.Stat(target); serr == nil {
		err = keepMode(tmp, old)
	}
	if err == nil {
		_, err = tmp.Write(b)
	}
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
		if fd := descriptorLink(path); fd != "" {
			return "", fmt.Errorf("%s: %w (a link through %s, an open descriptor's name)", path, ErrNotRegular, fd)
		}
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

// descriptorLink returns the first name on path's chain of symbolic links
// that names an open descriptor (/proc/PID/fd/N, /dev/fd/N), or "".
func descriptorLink(path string) string {
	p := path
	for range 40 { // the kernel's own limit on a chain of links
		if isDescriptorName(p) {
			return p
		}
		l, err := os.Readlink(p)
		if err != nil {
			return ""
		}
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(p), l)
		}
		p = filepath.Clean(l)
	}
	return ""
}

// isDescriptorName reports whether p is /proc/PID/fd/N or /dev/fd/N.
func isDescriptorName(p string) bool {
	p = filepath.ToSlash(filepath.Clean(p))
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok {
		return rest != "" && !strings.Contains(rest, "/")
	}
	parts := strings.Split(p, "/")
	return len(parts) == 5 && parts[1] == "proc" && parts[3] == "fd"
}

// keepMode gives tmp, about to replace old, old's permission bits and,
// where the process may (root), its owner and group.
func keepMode(tmp *os.File, old fs.FileInfo) error {
	if err := tmp.Chmod(old.Mode().Perm()); err != nil {
		return err
	}
	if uid, gid, ok := owner(old); ok && os.Geteuid() == 0 && (uid != os.Geteuid() || gid != os.Getegid()) {
		return tmp.Chown(uid, gid)
	}
	return nil
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
// device, a FIFO, a terminal, /dev/stderr), and appended to it, so that a
// regular file behind a descriptor's name (/dev/stderr redirected with
// 2>>log) keeps what it held. Opening does not wait for a FIFO's reader
// (none is an error), and the write gives up after 10 seconds where the
// file can say (a pipe or a terminal whose reader does not read). A
// directory is refused.
func WriteInPlace(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0)
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
