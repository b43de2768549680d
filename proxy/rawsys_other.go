//go:build unix && !linux

package proxy

import "golang.org/x/sys/unix"

// Elsewhere a non-blocking pipe is read and written through the runtime's
// system call path (rawsys_linux.go says why Linux does not).

func nbRead(fd int, p []byte) (int, error)  { return unix.Read(fd, p) }
func nbWrite(fd int, p []byte) (int, error) { return unix.Write(fd, p) }
