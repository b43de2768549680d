//go:build unix

package pollable

import (
	"os"
	"syscall"
)

// Dup returns a new *os.File on a duplicate of f's descriptor, close-on-exec
// and in non-blocking mode, which the Go runtime polls, so that Close or a
// deadline interrupts a blocked Read or Write; nil if that fails (use f as
// it is then). The duplicate shares f's open file description, so f becomes
// non-blocking too: Blocking puts it back.
func Dup(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd, err = syscall.Dup(int(u)) }); err != nil || fd < 0 {
		return nil
	}
	syscall.CloseOnExec(fd)
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}

// Blocking puts f's open file description back in blocking mode.
func Blocking(f *os.File) {
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) })
	}
}
