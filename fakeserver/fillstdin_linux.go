package fakeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// fillPipe fills the pipe on file descriptor 0, writing to it through
// /proc/self/fd/0, until a write of 64 bytes would block, and returns the
// bytes it then holds and its capacity.
func fillPipe() (fill, capacity int, err error) {
	capacity, err = unix.FcntlInt(0, unix.F_GETPIPE_SZ, 0)
	if err != nil {
		what := "not a pipe"
		var st unix.Stat_t
		if unix.Fstat(0, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFSOCK {
			what = "a socket, not a pipe"
		}
		return 0, 0, fmt.Errorf("stdin is %s: %w", what, err)
	}
	fd, err := unix.Open("/proc/self/fd/0", unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("opening stdin's pipe to write to it: %w", err)
	}
	defer unix.Close(fd)
	for _, size := range []int{64 << 10, 64} {
		b := bytes.Repeat([]byte{'x'}, size)
		for {
			_, err := unix.Write(fd, b)
			if errors.Is(err, unix.EAGAIN) {
				break
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				return 0, 0, fmt.Errorf("filling stdin's pipe: %w", err)
			}
		}
	}
	fill, err = unix.IoctlGetInt(0, unix.TIOCINQ) // FIONREAD
	return fill, capacity, err
}

// waitHangup waits until the pipe on file descriptor 0 has no writer left
// (POLLHUP, which comes whatever it holds), and reports whether it came
// before ctx ended. It looks every 100ms whether ctx has ended: poll(2)
// cannot wait on a context.
func waitHangup(ctx context.Context) bool {
	for ctx.Err() == nil {
		fds := []unix.PollFd{{Fd: 0}}
		n, err := unix.Poll(fds, 100)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false
		}
		if n > 0 && fds[0].Revents&unix.POLLHUP != 0 {
			return true
		}
	}
	return false
}
