//go:build unix && !linux

package proxy

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in a process group of its own, so that a
// terminal's Ctrl-C reaches it once (through the proxy) rather than twice.
// There is no Pdeathsig here: if the proxy is killed, the server sees EOF
// on its stdin.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
