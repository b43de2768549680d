package fakeserver

import (
	"errors"
	"fmt"
	"syscall"
)

// crashOnBrokenPipe is Faults.CrashOnBrokenPipe: a stdout write that found
// the host's end closed panics on a goroutine of its own, where no recover
// catches it, and the process ends as an uncaught error ends a server. It
// returns only where the fault does not apply.
func (s *Server) crashOnBrokenPipe(err error) {
	if !s.cfg.faults.CrashOnBrokenPipe || !s.stdio || !errors.Is(err, syscall.EPIPE) {
		return
	}
	go func() { panic(fmt.Sprintf("fakeserver: writing stdout: %v (CrashOnBrokenPipe)", err)) }()
	select {} // the panic ends the process
}
