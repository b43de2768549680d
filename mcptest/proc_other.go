//go:build !unix

package mcptest

import (
	"os"
	"os/exec"
)

type signalStep struct{ name string }

// escalation: without POSIX signals the only step is to kill the process.
var escalation = []signalStep{{"kill"}}

func setProcessGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ signalStep) { _ = cmd.Process.Kill() }

func killGroup(*exec.Cmd) {}

func exitSignal(*os.ProcessState) string { return "" }

// killEscaped: without process groups nothing escapes one.
func killEscaped(*exec.Cmd, string) []string { return nil }
