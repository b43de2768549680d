//go:build linux

package proxy

import (
	"os/exec"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// observerNice is the nice value of the observer's low-priority thread
// (Linux has it per thread: setpriority(2) on the thread id). At 19 a
// contended core gives it about 1.5% of the time a task at 0 gets.
const observerNice = 19

// The server's Pdeathsig (proc_linux.go) fires when the thread that
// started it exits, and the Go runtime ends a thread only when a goroutine
// locked to it ends: the low thread's. So a proxy starts its server on a
// thread it notes here, and a low thread is never one of these: a
// proxy's observer ending must not kill another proxy's server in the
// same process. (A program that starts children with Pdeathsig itself,
// from goroutines of its own, has the same hazard with any code that ends
// a locked goroutine.)
var forkers sync.Map // thread id → struct{}

// startServer starts cmd from a thread noted as one that started a child.
func startServer(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	forkers.Store(unix.Gettid(), struct{}{})
	return cmd.Start()
}

// lowerPriority locks the calling goroutine to its thread and lowers the
// thread's priority. The goroutine must then end locked, so that its
// thread ends with it: an unprivileged process cannot raise the priority
// back, and the runtime must not run other goroutines there. If the thread
// started a server, it is left locked and forker is true: the caller holds
// it, so that the next try runs elsewhere, then unlocks it.
func lowerPriority() (lowered, forker bool) {
	runtime.LockOSThread()
	if _, ok := forkers.Load(unix.Gettid()); ok {
		return false, true
	}
	if unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), observerNice) != nil {
		runtime.UnlockOSThread()
		return false, false
	}
	return true, false
}
