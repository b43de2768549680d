//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// startDaemon leaves "sleep 1000" in a session of its own, holding stdout.
func startDaemon() {
	d := exec.Command("sleep", "1000")
	d.Stdout = os.Stdout
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Start(); err != nil {
		fail(err)
	}
}
