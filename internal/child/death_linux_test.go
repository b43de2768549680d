//go:build linux

package child_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/child"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// TestDeathSignalOutlivesStarter: a child started by Start, with a
// parent-death signal, from a goroutine that then exits locked to its
// thread (which ends that thread), is not killed: its parent-death signal
// stays bound to the process. The child is ended by a SIGTERM of the
// test's, sent once the starter's thread is gone, and must die of that, not
// of a SIGKILL sent before. The same start by cmd.Start on the starter's
// thread is killed when the thread ends: the kernel's rule that Start is
// there for.
func TestDeathSignalOutlivesStarter(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(cmd *exec.Cmd, waited chan<- error) error
		want  syscall.Signal
	}{
		{"child.Start", func(cmd *exec.Cmd, waited chan<- error) error {
			return child.Start(cmd, func() { waited <- cmd.Wait() })
		}, syscall.SIGTERM},
		{"cmd.Start", func(cmd *exec.Cmd, waited chan<- error) error {
			if err := cmd.Start(); err != nil {
				return err
			}
			go func() { waited <- cmd.Wait() }()
			return nil
		}, syscall.SIGKILL},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "100")
			cmd.SysProcAttr = &syscall.SysProcAttr{}
			child.SetDeathSignal(cmd.SysProcAttr)
			waited := make(chan error, 1)
			started := make(chan error, 1)
			task := onEndingThread(func() { started <- c.start(cmd, waited) })
			if err := <-started; err != nil {
				t.Skip("no sleep command:", err)
			}
			// A thread's end has no event another thread can wait on.
			poll.Wait(t, time.Minute, "the starting thread gone", func() bool {
				_, err := os.Stat(task)
				return os.IsNotExist(err)
			}, nil)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			err := <-waited
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != c.want {
				t.Errorf("the child ended with %v, want killed by %v", err, c.want)
			}
		})
	}
}

// onEndingThread runs f on a goroutine locked to its thread, which the Go
// runtime ends when f returns, and returns that thread's /proc directory.
// The runtime never ends the main thread: a goroutine that lands there
// holds it (so that the next cannot) until f has run elsewhere.
func onEndingThread(f func()) string {
	release := make(chan struct{})
	defer close(release)
	for {
		tid := make(chan int)
		go func() {
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				tid <- 0
				<-release
				runtime.UnlockOSThread()
				return
			}
			tid <- syscall.Gettid()
			f() // returns locked: the thread ends with this goroutine
		}()
		if id := <-tid; id != 0 {
			return fmt.Sprintf("/proc/self/task/%d", id)
		}
	}
}
