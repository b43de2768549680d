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

// startDetached leaves "sleep arg" fully detached: in a session of its
// own, double-forked (a shell that starts it in the background and
// exits), its stdio on /dev/null, with an empty environment.
func startDetached(arg string) {
	d := exec.Command("/bin/sh", "-c", `sleep "$0" </dev/null >/dev/null 2>&1 &`, arg)
	d.Env = []string{}
	d.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := d.Run(); err != nil {
		fail(err)
	}
}
