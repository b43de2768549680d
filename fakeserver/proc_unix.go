//go:build unix

package fakeserver

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the child in its own process group, so that a cancel
// kills whatever it started too.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(cmd *exec.Cmd) error {
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
