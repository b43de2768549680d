//go:build unix

package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/child"
	"github.com/mcpstdio/mcpstdio/internal/proc"
)

type signalStep struct {
	name string
	sig  syscall.Signal
}

// escalation is what Close sends after closing stdin: SIGTERM asks, SIGQUIT
// makes a Go server print its goroutines to stderr (kept in the capture),
// SIGKILL ends it.
var escalation = []signalStep{{"SIGTERM", syscall.SIGTERM}, {"SIGQUIT", syscall.SIGQUIT}, {"SIGKILL", syscall.SIGKILL}}

// setProcessGroup puts the child in a process group of its own, so that
// signals reach the processes it starts too, and has it killed if this
// process dies (Linux).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	child.SetDeathSignal(cmd.SysProcAttr)
}

func ownGroup(cmd *exec.Cmd) bool {
	return cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid && cmd.SysProcAttr.Pgid == 0
}

func signalGroup(cmd *exec.Cmd, s signalStep) {
	if ownGroup(cmd) {
		_ = syscall.Kill(-cmd.Process.Pid, s.sig)
		return
	}
	_ = cmd.Process.Signal(s.sig)
}

// killGroup kills what is left of the child's process group after the child
// itself has ended.
func killGroup(cmd *exec.Cmd) {
	if ownGroup(cmd) {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func exitSignal(st *os.ProcessState) string {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return sigName(ws.Signal())
	}
	return ""
}

func sigName(s syscall.Signal) string {
	switch s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return s.String()
}

// killEscaped kills the processes that carry marker outside the child's
// process group (setsid) and returns them as "pid N (command line)".
// It waits, at most a second, for them to be gone.
func killEscaped(cmd *exec.Cmd, marker string) []string {
	var out []string
	var killed []proc.ID
	for _, id := range proc.Find(nil, marker) {
		if g := id.Group(); g == 0 || (ownGroup(cmd) && g == cmd.Process.Pid) {
			continue
		}
		out = append(out, fmt.Sprintf("pid %d (%s)", id.PID, proc.CommandLine(id.PID)))
		_ = syscall.Kill(id.PID, syscall.SIGKILL)
		killed = append(killed, id)
	}
	deadline := time.Now().Add(time.Second)
	for slices.ContainsFunc(killed, proc.ID.Running) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // a killed process's exit has no event to wait on here
	}
	return out
}
