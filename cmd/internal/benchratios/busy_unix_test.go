//go:build unix

package main

import (
	"errors"
	"syscall"
	"testing"
)

// TestKeepBusy: the loops run until stop, which ends and waits for them.
func TestKeepBusy(t *testing.T) {
	var pids []int
	stop := keepBusy(2)
	for _, c := range busyCmds() {
		pids = append(pids, c.Process.Pid)
	}
	if len(pids) != 2 {
		t.Fatalf("%d loops, want 2", len(pids))
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err != nil {
			t.Errorf("loop %d is not running: %v", pid, err)
		}
	}
	stop()
	for _, pid := range pids {
		// Waited for: the process is gone, not a zombie.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("loop %d after stop: %v, want %v", pid, err, syscall.ESRCH)
		}
	}
	if len(busyCmds()) != 0 {
		t.Error("stop left loops behind")
	}
}
