//go:build linux

package mcptest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
	"golang.org/x/sys/unix"
)

// threadStates reads /proc/<pid>/task/*/{syscall,wchan}. Reading syscall
// needs ptrace access to the process, which a parent has unless Yama's
// ptrace_scope is 2 or more; without it Syscall is -1, only wchan is known,
// and no thread counts as writing stdout (a wchan alone cannot tell stdout
// from any other pipe): the pipe evidence remains.
func threadStates(pid int, stdout *os.File) ([]threadState, error) {
	link := pipeLink(stdout)
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []threadState
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t := threadState{pid: pid, tid: tid, syscall: -1, fd: -1, run: -1}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat")); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
				t.state = b[i+2]
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat")); err == nil {
			if f := strings.Fields(string(b)); len(f) >= 2 {
				r, err1 := strconv.ParseInt(f[0], 10, 64)
				q, err2 := strconv.ParseInt(f[1], 10, 64)
				if err1 == nil && err2 == nil {
					t.run, t.wait = time.Duration(r), time.Duration(q)
				}
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "syscall")); err == nil {
			f := strings.Fields(string(b))
			if len(f) >= 2 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil && n >= 0 {
					t.syscall = n
					if fd, err := strconv.ParseInt(strings.TrimPrefix(f[1], "0x"), 16, 64); err == nil {
						t.fd = fd
					}
				}
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name(), "wchan")); err == nil {
			t.wchan = strings.TrimSpace(string(b))
		}
		isWrite := t.syscall == unix.SYS_WRITE || t.syscall == unix.SYS_WRITEV
		// Only a write to the session's stdout pipe counts: a thread
		// blocked on another pipe (a subprocess's stdin, a log pipe)
		// proves nothing. The pipe is matched by inode, so a server that
		// moved the protocol off fd 1 is still seen; fd 1 is the fallback.
		if isWrite {
			if target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, t.fd)); err == nil && link != "" {
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

// pipeLink returns what /proc/<pid>/fd/<n> reads for a descriptor of the
// pipe f is an end of: "pipe:[inode]"; "" if unknown.
func pipeLink(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil || serr != nil {
		return ""
	}
	return fmt.Sprintf("pipe:[%d]", st.Ino)
}

// pipeHolders lists the other processes that hold a descriptor of the pipe
// of which f is our end, as "pid N: command line", found through
// /proc/*/fd. Processes this one cannot inspect are not seen.
func pipeHolders(f *os.File) []string {
	link := pipeLink(f)
	if link == "" {
		return nil
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []string
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == self {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if t, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil && t == link {
				out = append(out, fmt.Sprintf("pid %d: %s", pid, proc.CommandLine(pid)))
				break
			}
		}
	}
	return out
}

// treeStates returns the threads of pid and of its descendants (found
// through /proc/<pid>/task/*/children, at most 64 processes) and the CPU
// time of their children that ended and were reaped (cutime and cstime:
// a child that ran between two looks is seen only there); ok is false
// where pid cannot be seen.
func treeStates(pid int, stdout *os.File) (ts []threadState, reaped time.Duration, ok bool) {
	pids := []int{pid}
	for i := 0; i < len(pids) && len(pids) < 64; i++ {
		ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pids[i]))
		for _, e := range ents {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pids[i], e.Name()))
			for _, f := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(f); err == nil {
					pids = append(pids, n)
				}
			}
		}
	}
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

// reapedTime is cutime plus cstime of /proc/<pid>/stat (fields 16 and 17,
// in ticks of 10 ms on every Linux Go supports); 0 where unknown.
func reapedTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')') // the command may hold anything
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 15 {
		return 0
	}
	cu, _ := strconv.ParseInt(f[13], 10, 64)
	cs, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(cu+cs) * 10 * time.Millisecond
}
