//go:build unix

package state

import (
	"errors"
	"syscall"
)

// pidGone reports whether no process has pid (kill(pid, 0) fails with
// ESRCH).
func pidGone(pid int) (gone, known bool) {
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true, true
	}
	return false, err == nil || errors.Is(err, syscall.EPERM)
}
