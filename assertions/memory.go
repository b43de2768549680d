package assertions

import (
	"errors"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// peakMemoryKB returns a process's peak resident set size (VmHWM) in KiB.
func peakMemoryKB(pid int) (int64, error) {
	if pid <= 0 {
		return 0, errors.New("not a child process")
	}
	return proc.StatusKB(pid, "VmHWM")
}
