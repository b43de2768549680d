//go:build !unix

package fakeserver

import "os/exec"

// setProcessGroup does nothing where there are no process groups: a cancel
// kills the child only, not what it started.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
