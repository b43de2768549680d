//go:build unix

package fakeserver

import (
	"os"
	"syscall"
)

// pollable returns a new *os.File on a duplicate of f's descriptor in
// non-blocking mode, which the Go runtime polls, so Close interrupts a
// blocked Read or Write; nil if that fails (f is then used as it is). The
// duplicate shares f's open file description, so f becomes non-blocking too.
func pollable(f *os.File) *os.File {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if err := rc.Control(func(u uintptr) { fd, err = syscall.Dup(int(u)) }); err != nil || fd < 0 {
		return nil
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), f.Name())
}
