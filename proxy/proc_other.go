//go:build !unix

package proxy

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// setProcAttr does nothing here: the server shares the proxy's console.
func setProcAttr(*exec.Cmd) {}

// exitInfo says how the server ended: its exit code.
func exitInfo(ps *os.ProcessState, err error) ExitInfo {
	if ps == nil {
		return ExitInfo{Code: -1, Status: 1, Text: fmt.Sprintf("could not be waited for: %v", err)}
	}
	code := ps.ExitCode()
	return ExitInfo{Code: code, Status: code, Text: fmt.Sprintf("exit status %d", code)}
}

// signalServer can only kill on this system: there is no SIGTERM, and an
// interrupt cannot be sent to another process.
func signalServer(p *os.Process, sig os.Signal) error {
	if sig == os.Kill {
		return p.Kill()
	}
	return fmt.Errorf("proxy: passing %v on: %w", sig, errors.ErrUnsupported)
}

func signalName(sig os.Signal) string { return sig.String() }

func pauseServer(*os.Process, bool) error {
	return fmt.Errorf("proxy: stopping a process: %w", errors.ErrUnsupported)
}

const canPause = false
