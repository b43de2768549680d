//go:build !linux

package proxy

import "os/exec"

// lowerPriority does nothing: elsewhere the observer has no thread of its
// own.
func lowerPriority() (lowered, forker bool) { return false, false }

func startServer(cmd *exec.Cmd) error { return cmd.Start() }
