//go:build unix

package mcptest_test

import (
	"errors"
	"fmt"
	"syscall"
)

// processGone reports an error if process pid still exists (a zombie
// counts: it was not reaped).
func processGone(pid int) error {
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("server process %d still exists after Close (kill 0: %v)", pid, err)
	}
	return nil
}
