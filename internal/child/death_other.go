//go:build !linux

package child

import "syscall"

// SetDeathSignal does nothing here: only Linux has a parent-death signal
// that this package uses.
func SetDeathSignal(*syscall.SysProcAttr) {}
