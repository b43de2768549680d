//go:build linux

package mcptest

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
	"golang.org/x/sys/unix"
)

// threadStates reads the state of every thread of process pid: its stat,
// schedstat, system call and wchan. Reading the system call needs ptrace
// access to the process, which a parent has unless Yama's ptrace_scope is 2
// or more; without it syscall is -1, only wchan is known, and no thread
// counts as writing stdout (a wchan alone cannot tell stdout from any other
// pipe): the pipe evidence remains.
func threadStates(pid int, stdout *os.File) ([]threadState, error) {
	link := proc.PipeLink(stdout)
	tids, err := proc.Threads(pid)
	if err != nil {
		return nil, err
	}
	var out []threadState
	for _, tid := range tids {
		t := threadState{pid: pid, tid: tid, syscall: -1, fd: -1, run: -1}
		if st, ok := proc.ReadThreadStat(pid, tid); ok {
			t.state = st.State
		}
		if run, wait, ok := proc.Schedstat(pid, tid); ok {
			t.run, t.wait = run, wait
		}
		if nr, arg0, ok := proc.Syscall(pid, tid); ok {
			t.syscall, t.fd = nr, arg0
		}
		t.wchan = proc.Wchan(pid, tid)
		isWrite := t.syscall == unix.SYS_WRITE || t.syscall == unix.SYS_WRITEV
		// Only a write to the session's stdout pipe counts: a thread
		// blocked on another pipe (a subprocess's stdin, a log pipe)
		// proves nothing. The pipe is matched by inode, so a server that
		// moved the protocol off fd 1 is still seen; fd 1 is the fallback.
		if isWrite {
			if target, err := proc.FD(pid, t.fd); err == nil && link != "" {
				t.write = target == link
			} else {
				t.write = t.fd == 1
			}
		}
		out = append(out, t)
	}
	return out, nil
}

func syscallName(n int64) string {
	switch n {
	case unix.SYS_WRITE:
		return "write"
	case unix.SYS_WRITEV:
		return "writev"
	case unix.SYS_READ:
		return "read"
	case unix.SYS_FUTEX:
		return "futex"
	case unix.SYS_EPOLL_PWAIT:
		return "epoll_pwait"
	}
	return "#" + strconv.FormatInt(n, 10)
}

// pipeFill returns the bytes buffered in the pipe of which f is either end,
// and its capacity. pipes.Pipe.Buffered asks the read end, which the session
// no longer holds for a child's stdin; FIONREAD and F_GETPIPE_SZ work on
// either end.
func pipeFill(f *os.File) (buffered, capacity int, err error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var ierr error
	err = rc.Control(func(fd uintptr) {
		buffered, ierr = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
		if ierr == nil {
			capacity, ierr = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0)
		}
	})
	if err == nil {
		err = ierr
	}
	return buffered, capacity, err
}

// pipeHolders lists the other processes that hold a descriptor of the pipe
// of which f is our end, as "pid N: command line". Processes this one
// cannot inspect are not seen.
func pipeHolders(f *os.File) []string {
	var out []string
	for _, id := range proc.Find(f, "") {
		out = append(out, fmt.Sprintf("pid %d: %s", id.PID, proc.CommandLine(id.PID)))
	}
	return out
}

// treeStates returns the threads of pid and of its descendants (at most 63
// of them) and the CPU time of their children that ended and were reaped
// (cutime and cstime: a child that ran between two looks is seen only
// there); ok is false where pid cannot be seen.
func treeStates(pid int, stdout *os.File) (ts []threadState, reaped time.Duration, ok bool) {
	pids := append([]int{pid}, proc.Descendants(pid, 63)...)
	for i, p := range pids {
		t, err := threadStates(p, stdout)
		if err != nil && i == 0 {
			return nil, 0, false
		}
		ts = append(ts, t...)
		reaped += reapedTime(p)
	}
	return ts, reaped, len(ts) > 0 && ts[0].run >= 0
}

// reapedTime is the CPU time of pid's children that ended and were reaped
// (cutime and cstime); 0 where unknown.
func reapedTime(pid int) time.Duration {
	st, _ := proc.ReadStat(pid)
	return st.Reaped
}
