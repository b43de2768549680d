//go:build linux

package pipes

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// control runs fn on f's descriptor without switching f to blocking mode,
// which f.Fd() would do and which would break read deadlines.
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

func setCapacity(f *os.File, n int) (int, error) {
	var got int
	err := control(f, func(fd int) error {
		c, err := unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, n)
		got = c
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pipes: F_SETPIPE_SZ %d: %w", n, err)
	}
	return got, nil
}

func capacity(f *os.File) (int, error) {
	var got int
	err := control(f, func(fd int) error {
		c, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0)
		got = c
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pipes: F_GETPIPE_SZ: %w", err)
	}
	return got, nil
}

func buffered(f *os.File) (int, error) {
	var got int
	err := control(f, func(fd int) error {
		c, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD
		got = c
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("pipes: FIONREAD: %w", err)
	}
	return got, nil
}
