//go:build !linux

package watchdog

import "errors"

// Guard is a running watchdog; only Linux has one.
type Guard struct{}

// Start: only Linux has a watchdog (and a parent-death signal); elsewhere
// it returns nil and an error wrapping errors.ErrUnsupported.
func Start() (*Guard, error) { return nil, errors.ErrUnsupported }

// Close does nothing here.
func (*Guard) Close() {}

// Serve returns at once here: no process is started as a watchdog.
func Serve() {}
