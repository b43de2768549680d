//go:build linux

package child

import (
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): a process among its descendants whose parent
// ends (the grandchild of a double fork, a server its host left) becomes
// its child instead of init's, where proc.Children finds it. What it
// adopts it must reap (Reap), or the ended ones stay zombies until it
// exits.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// Subreaper reports whether this process is a child subreaper.
func Subreaper() bool {
	var v int32
	err := unix.Prctl(unix.PR_GET_CHILD_SUBREAPER, uintptr(unsafe.Pointer(&v)), 0, 0, 0)
	return err == nil && v != 0
}

// Reap waits, at most within, for pid, a child of this process, to end,
// and reaps it. It reports whether pid is reaped (or was no child to
// reap); never a child that os/exec started, whose Wait would fail.
func Reap(pid int, within time.Duration) bool {
	if fd, err := unix.PidfdOpen(pid, 0); err == nil {
		// Readable once the process has ended.
		deadline := time.Now().Add(within)
		for {
			_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(max(time.Until(deadline), 0).Milliseconds()))
			if !errors.Is(err, unix.EINTR) {
				break
			}
		}
		unix.Close(fd)
	}
	var ws unix.WaitStatus
	wpid, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	return wpid == pid || errors.Is(err, unix.ECHILD)
}
