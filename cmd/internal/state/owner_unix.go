//go:build unix

package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// checkOwned refuses what another user could have made or can change: a
// file or directory (fi, at path) not owned by this process's user, or
// writable by its group or by others. Another local user can create
// $TMPDIR/mcpstdio-<uid> first, or plant status files in a directory
// they can write.
func checkOwned(path string, fi fs.FileInfo) error {
	if err := checkOwner(path, fi); err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 && fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("state: %s is writable by its group or others (mode %v, owner %s): not trusting it", path, fi.Mode().Perm(), userName(uint32(os.Getuid())))
	}
	return nil
}

// checkOwner is checkOwned without the mode: fi's owner only.
func checkOwner(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("state: %s is owned by %s, not by this user (%s): not trusting it", path, userName(st.Uid), userName(uint32(uid)))
	}
	return nil
}

// userName is "uid N (name)", or "uid N" when the name is not known.
func userName(uid uint32) string {
	id := strconv.FormatUint(uint64(uid), 10)
	// /etc/passwd, read directly: os/user would link cgo into the
	// statically linked mcpstdio-proxy.
	if b, err := os.ReadFile("/etc/passwd"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Split(l, ":"); len(f) > 2 && f[2] == id {
				return "uid " + id + " (" + f[0] + ")"
			}
		}
	}
	return "uid " + id
}

// openNoFollow opens path for reading, failing on a symbolic link and not
// waiting for a writer if it is a FIFO.
func openNoFollow(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil && errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symbolic link: not a regular file", path)
	}
	return f, err
}

// Flags of openPrivate: never follow a link at the name, never wait on a
// FIFO.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)

// isLoop reports whether err is O_NOFOLLOW's refusal of a symbolic link.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }
