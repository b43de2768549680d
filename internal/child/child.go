// Package child starts the processes the library runs (a server under test,
// a host command) so that they end with the process that started them, and
// finds what a host left behind: on Linux, a parent-death signal kills a
// child whose parent dies, and a child subreaper adopts what a child
// detaches (setsid, a double fork). Elsewhere it starts children plainly
// and adopts nothing.
package child

import (
	"os/exec"
	"runtime"
)

// Start starts cmd on a goroutine locked to its OS thread and, if it
// started, runs wait (cmd.Wait and what follows it) on that goroutine,
// which stays locked until wait returns. It returns cmd.Start's error once
// the child has started or failed to.
//
// The lock is what makes a parent-death signal (SetDeathSignal) mean the
// death of this process: Linux sends it when the thread that started the
// child ends, not the process, and the Go runtime ends a thread when a
// goroutine locked to it exits. Started from any goroutine, the child could
// be killed when some other goroutine later locked that thread and exited;
// the thread kept here ends only with the process. It costs one OS thread
// per running child.
func Start(cmd *exec.Cmd, wait func()) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			wait()
		}
	}()
	return <-started
}
