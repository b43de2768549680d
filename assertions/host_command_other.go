//go:build !unix

package assertions

import "os/exec"

// setProcessGroup does nothing here: only unix has process groups.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the host command alone: a fake it started ends
// when its stdin does.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
