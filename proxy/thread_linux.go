//go:build linux

package proxy

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// observerNice is the nice value of the observer's low-priority thread
// (Linux has it per thread: setpriority(2) on the thread id). At 19 a
// contended core gives it about 1.5% of the time a task at 0 gets.
const observerNice = 19

// lowerPriority locks the calling goroutine to its thread and lowers the
// thread's priority. The goroutine must then end locked, so that its
// thread ends with it: an unprivileged process cannot raise the priority
// back, and the runtime must not run other goroutines there.
func lowerPriority() bool {
	runtime.LockOSThread()
	if unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), observerNice) != nil {
		runtime.UnlockOSThread()
		return false
	}
	return true
}
