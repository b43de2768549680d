//go:build unix

package testserver

import (
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
