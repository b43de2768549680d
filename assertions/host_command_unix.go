//go:build unix

package assertions

import (
	"os/exec"
	"syscall"

	"github.com/mcpstdio/mcpstdio/internal/child"
)

// setProcessGroup puts a host command in a process group of its own, so
// that the fake it starts can be ended with it, and has it killed if this
// process dies (Linux).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	child.SetDeathSignal(cmd.SysProcAttr)
}

// killProcessGroup kills the host command's process group: the host and
// the servers it started.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killPID kills one process.
func killPID(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
