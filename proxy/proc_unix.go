//go:build unix

package proxy

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// exitInfo says how the server ended: its exit code, or the signal that
// killed it and the status a shell would report (128 + the signal's
// number).
func exitInfo(ps *os.ProcessState, err error) ExitInfo {
	if ps == nil {
		return ExitInfo{Code: -1, Status: 1, Text: fmt.Sprintf("could not be waited for: %v", err)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		name := unix.SignalName(ws.Signal())
		return ExitInfo{Code: -1, Signal: name, Status: 128 + int(ws.Signal()), Text: "killed by " + name}
	}
	code := ps.ExitCode()
	return ExitInfo{Code: code, Status: code, Text: fmt.Sprintf("exit status %d", code)}
}

// signalServer passes sig on to the server process.
func signalServer(p *os.Process, sig os.Signal) error { return p.Signal(sig) }

// signalName returns a signal's name as in "kill -l": SIGTERM.
func signalName(sig os.Signal) string {
	if s, ok := sig.(syscall.Signal); ok {
		if n := unix.SignalName(s); n != "" {
			return n
		}
	}
	return sig.String()
}

// pauseServer stops the server (SIGSTOP) or lets it go on (SIGCONT).
func pauseServer(p *os.Process, stop bool) error {
	if stop {
		return p.Signal(syscall.SIGSTOP)
	}
	return p.Signal(syscall.SIGCONT)
}

// canPause reports whether pauseServer works here.
const canPause = true
