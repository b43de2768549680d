//go:build linux

package proc_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// TestReaders: this process's stat, threads, schedstat, peak memory and a
// pipe's descriptor read back as what this process knows of itself.
func TestReaders(t *testing.T) {
	self := os.Getpid()
	st, ok := proc.ReadStat(self)
	if !ok || st.PPID != os.Getppid() || st.Group != syscall.Getpgrp() || st.Start == 0 {
		t.Errorf("ReadStat(self) = %+v, %v; want parent %d, group %d, a start time", st, ok, os.Getppid(), syscall.Getpgrp())
	}
	runtime.LockOSThread()
	me := syscall.Gettid()
	ts, ok := proc.ReadThreadStat(self, me)
	runtime.UnlockOSThread()
	if !ok || ts.State != 'R' {
		t.Errorf("ReadThreadStat(self, this thread) = %+v, %v; want state R (running)", ts, ok)
	}
	tids, err := proc.Threads(self)
	if err != nil || !slices.Contains(tids, self) {
		t.Fatalf("Threads(self) = %v, %v; want the main thread %d among them", tids, err, self)
	}
	if ts, ok := proc.ReadThreadStat(self, self); !ok || ts.Start != st.Start {
		t.Errorf("ReadThreadStat(self, main thread) = %+v, %v; want the process's start time %d", ts, ok, st.Start)
	}
	if run, _, ok := proc.Schedstat(self, self); ok && run <= 0 {
		t.Errorf("Schedstat(self, main thread) = run %v; want more than 0", run)
	}
	if kb, err := proc.StatusKB(self, "VmHWM"); err != nil || kb <= 0 {
		t.Errorf("StatusKB(self, VmHWM) = %d, %v; want more than 0 KiB", kb, err)
	}
	if _, err := proc.StatusKB(self, "NoSuchField"); err == nil {
		t.Error("StatusKB(self, NoSuchField): no error")
	}
	if l, err := proc.LoadAverage(); err != nil || l[0] < 0 || l[1] < 0 || l[2] < 0 {
		t.Errorf("LoadAverage() = %v, %v; want three averages", l, err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	link := proc.PipeLink(r)
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	rc.Control(func(f uintptr) { fd = f })
	if got, err := proc.FD(self, int64(fd)); err != nil || got != link || link == "" {
		t.Errorf("FD(self, pipe's write end) = %q, %v; want PipeLink of its read end, %q", got, err, link)
	}
	if _, ok := proc.ReadStat(1 << 30); ok {
		t.Error("ReadStat of no process: ok")
	}
}

// TestSleeperSyscall: a child asleep is seen in a system call, with a
// wait channel, where this process may read them (ptrace access).
func TestSleeperSyscall(t *testing.T) {
	cmd, _ := startShell(t, "echo ready; exec sleep 60")
	pid := cmd.Process.Pid
	if _, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, pid)); err != nil {
		t.Skip("a child's system call cannot be read here (ptrace access):", err)
	}
	// The child reaches its sleep after it printed "ready": a state with no
	// event to wait on.
	poll.Wait(t, 10*time.Second, "the child asleep in a system call", func() bool {
		_, _, ok := proc.Syscall(pid, pid)
		return ok
	}, nil)
	if nr, _, _ := proc.Syscall(pid, pid); nr < 0 {
		t.Errorf("Syscall(sleeping child) = %d, want a system call number", nr)
	}
	if w := proc.Wchan(pid, pid); w == "" {
		t.Errorf("Wchan(sleeping child) = %q, want what the kernel shows (a function, or 0)", w)
	}
}

// TestDescendants: a shell that starts a shell that starts a sleep has both
// as descendants, breadth first, within the limit, whichever way this
// kernel shows them.
func TestDescendants(t *testing.T) {
	cmd, _ := startShell(t, `sh -c "sleep 60 & echo ready; wait" & wait`)
	outer := cmd.Process.Pid
	d := proc.Descendants(outer, 10)
	if len(d) != 2 {
		t.Fatalf("Descendants(outer shell) = %v, want the inner shell and its sleep", d)
	}
	if st, ok := proc.ReadStat(d[0]); !ok || st.PPID != outer {
		t.Errorf("Descendants(outer)[0] = %d, parent %d (%v); want a child of %d", d[0], st.PPID, ok, outer)
	}
	if st, ok := proc.ReadStat(d[1]); !ok || st.PPID != d[0] {
		t.Errorf("Descendants(outer)[1] = %d, parent %d (%v); want a child of %d", d[1], st.PPID, ok, d[0])
	}
	if got := proc.Descendants(outer, 1); !slices.Equal(got, d[:1]) {
		t.Errorf("Descendants(outer, 1) = %v, want %v", got, d[:1])
	}
	if got := proc.Descendants(d[1], 10); len(got) != 0 {
		t.Errorf("Descendants(sleep) = %v, want none", got)
	}
}

// startShell runs script in sh, in a process group of its own that the
// test's cleanup kills, and returns once the script has printed its first
// line ("ready").
func startShell(t *testing.T, script string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	r := bufio.NewReader(out)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s: first line %q, %v; want ready", script, line, err)
	}
	return cmd, r
}
