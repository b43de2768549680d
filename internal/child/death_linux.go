//go:build linux

package child

import "syscall"

// SetDeathSignal has the kernel kill the child (SIGKILL) if the process
// that starts it with Start dies. It sets a's Pdeathsig unless it is set.
func SetDeathSignal(a *syscall.SysProcAttr) {
	if a.Pdeathsig == 0 {
		a.Pdeathsig = syscall.SIGKILL
	}
}
