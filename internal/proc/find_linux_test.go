//go:build linux

package proc_test

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// TestFindAndRunning: a child holding a pipe's write end, or marked in its
// environment, is found, identified and running; once ended and reaped it
// is not running, and a pid with another start time is not it.
func TestFindAndRunning(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("sleep", "60")
	cmd.Stdout = w
	cmd.Env = append(os.Environ(), "PROC_TEST_MARK=1")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	w.Close()
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	id, ok := proc.Identify(pid)
	if !ok || !id.Running() || id.Start == 0 {
		t.Fatalf("Identify(%d) = %+v, %v; want a running process with a start time", pid, id, ok)
	}
	if g := id.Group(); g != syscall.Getpgrp() {
		t.Errorf("Group() = %d, want this process's group %d", g, syscall.Getpgrp())
	}
	if got := proc.Find(r, ""); !slices.Contains(got, id) {
		t.Errorf("Find(pipe) = %v, want %v among them", got, id)
	}
	if got := proc.Find(nil, "PROC_TEST_MARK=1"); !slices.Contains(got, id) {
		t.Errorf("Find(env) = %v, want %v among them", got, id)
	}
	if got := proc.Find(nil, "PROC_TEST_MARK=2"); slices.Contains(got, id) {
		t.Errorf("Find(another env) = %v, want not %v", got, id)
	}
	if (proc.ID{PID: pid, Start: id.Start + 1}).Running() {
		t.Error("an ID with another start time is running")
	}
	cmd.Process.Kill()
	cmd.Wait()
	if id.Running() {
		t.Errorf("%+v still running after kill and wait", id)
	}
}

// TestStopped: a child is not stopped while it runs, is once SIGSTOP has
// taken every thread (the kernel stops them after kill returns; waited
// for as its parent, wait4 with WUNTRACED), and is not once continued
// (WCONTINUED).
func TestStopped(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep command:", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	if stopped, known := proc.Stopped(pid); stopped || !known {
		t.Fatalf("Stopped(%d) of a running child = %v, %v; want false, true", pid, stopped, known)
	}
	var ws syscall.WaitStatus
	cmd.Process.Signal(syscall.SIGSTOP)
	if _, err := syscall.Wait4(pid, &ws, syscall.WUNTRACED, nil); err != nil || !ws.Stopped() {
		t.Fatalf("wait4 after SIGSTOP: %v, status %v", err, ws)
	}
	if stopped, known := proc.Stopped(pid); !stopped || !known {
		t.Errorf("Stopped(%d) of a stopped child = %v, %v; want true, true", pid, stopped, known)
	}
	cmd.Process.Signal(syscall.SIGCONT)
	if _, err := syscall.Wait4(pid, &ws, syscall.WCONTINUED, nil); err != nil || !ws.Continued() {
		t.Fatalf("wait4 after SIGCONT: %v, status %v", err, ws)
	}
	if stopped, _ := proc.Stopped(pid); stopped {
		t.Errorf("Stopped(%d) of a continued child = true, want false", pid)
	}
	if stopped, known := proc.Stopped(1 << 30); stopped || known {
		t.Errorf("Stopped of no process = %v, %v; want false, false", stopped, known)
	}
}
