//go:build !unix

package assertions

import (
	"os"
	"os/exec"
)

// setProcessGroup does nothing here: only unix has process groups.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the host command alone: a fake it started ends
// when its stdin does.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// killPID kills one process.
func killPID(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
