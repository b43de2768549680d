//go:build unix

package mcptest_test

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func ignoreSIGTERM() { signal.Ignore(syscall.SIGTERM) }

// blockUntilSignal blocks until the process is killed. (A bare select{}
// would trip the runtime's deadlock detector and exit 2.)
func blockUntilSignal() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	<-c
}

// processGone reports an error if process pid still exists (a zombie
// counts: it was not reaped).
func processGone(pid int) error {
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("server process %d still exists after Close (kill 0: %v)", pid, err)
	}
	return nil
}
