//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalWidth reports whether f is a terminal and, if so, its width in
// columns (0 when the terminal does not say). The window-size ioctl succeeds
// only on a terminal: on a pipe or a file it fails with ENOTTY.
func terminalWidth(f *os.File) (width int, ok bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}
