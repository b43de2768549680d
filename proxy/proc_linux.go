//go:build linux

package proxy

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in a process group of its own, so that a
// terminal's Ctrl-C reaches it once (through the proxy) rather than twice,
// and has the kernel kill it if the proxy dies (as a host killing the
// proxy would have killed the server). Pdeathsig fires when the thread that
// started the child exits, which the Go runtime does only for a goroutine
// that exits while locked to its thread; the proxy has none.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
