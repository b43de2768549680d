//go:build linux

package fakeserver

import (
	"os"

	"golang.org/x/sys/unix"
)

// peekUnread returns up to limit bytes of what f, a pipe or a socket, holds
// unread, without taking them (tee(2) for a pipe, MSG_PEEK for a socket),
// and how many bytes it holds in all.
func peekUnread(f *os.File, limit int) ([]byte, int) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, 0
	}
	var b []byte
	var n int
	_ = rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
		if n <= 0 {
			return
		}
		want := min(n, limit)
		var p [2]int
		if unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK) == nil {
			defer unix.Close(p[0])
			defer unix.Close(p[1])
			_, _ = unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, want)
			if m, err := unix.Tee(int(fd), p[1], want, unix.SPLICE_F_NONBLOCK); err == nil && m > 0 {
				b = make([]byte, m)
				k, _ := unix.Read(p[0], b)
				b = b[:max(k, 0)]
				return
			}
		}
		buf := make([]byte, want)
		if m, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT); err == nil && m > 0 {
			b = buf[:m]
		}
	})
	return b, n
}
