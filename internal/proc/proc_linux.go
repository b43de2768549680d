//go:build linux

package proc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// CommandLine returns process pid's command line, its arguments joined by
// spaces and cut to 120 bytes; "?" if it cannot be read.
func CommandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// ReadStat reads /proc/<pid>/stat; ok is false if there is no such
// process or the file cannot be read.
func ReadStat(pid int) (Stat, bool) {
	return parseStat(fmt.Sprintf("/proc/%d/stat", pid))
}

// ReadThreadStat reads /proc/<pid>/task/<tid>/stat, the stat of one
// thread of process pid; ok is false if there is no such thread.
func ReadThreadStat(pid, tid int) (Stat, bool) {
	return parseStat(fmt.Sprintf("/proc/%d/task/%d/stat", pid, tid))
}

func parseStat(path string) (Stat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Stat{}, false
	}
	// The command is in parentheses and may hold anything: the fields
	// start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return Stat{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, the state
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, false
	}
	n := func(field int) int64 { v, _ := strconv.ParseInt(f[field-3], 10, 64); return v }
	start, err := strconv.ParseUint(f[22-3], 10, 64)
	if err != nil {
		return Stat{}, false
	}
	return Stat{
		State:  f[0][0],
		PPID:   int(n(4)),
		Group:  int(n(5)),
		CPU:    time.Duration(n(14)+n(15)) * clockTick,
		Reaped: time.Duration(n(16)+n(17)) * clockTick,
		Start:  start,
	}, true
}

// Threads lists the thread ids of process pid (/proc/<pid>/task).
func Threads(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// Schedstat returns how long thread tid of process pid has run on a CPU
// and waited on a run queue, in nanoseconds
// (/proc/<pid>/task/<tid>/schedstat; the kernel counts the wait only once
// the thread runs); ok is false where it cannot be read.
func Schedstat(pid, tid int) (run, wait time.Duration, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
}

// Syscall returns the system call thread tid of process pid is in and its
// first argument (for write, the file descriptor; -1 if unknown), from
// /proc/<pid>/task/<tid>/syscall. ok is false when the thread runs in user
// space, or the file cannot be read: reading it needs ptrace access to the
// process, which a parent has unless Yama's ptrace_scope is 2 or more.
func Syscall(pid, tid int) (nr, arg0 int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		return -1, -1, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return -1, -1, false
	}
	nr, err = strconv.ParseInt(f[0], 10, 64)
	if err != nil || nr < 0 {
		return -1, -1, false
	}
	arg0, err = strconv.ParseInt(strings.TrimPrefix(f[1], "0x"), 16, 64)
	if err != nil {
		arg0 = -1
	}
	return nr, arg0, true
}

// Wchan returns the kernel function thread tid of process pid waits in
// (/proc/<pid>/task/<tid>/wchan): "0" if none, "" if it cannot be read.
func Wchan(pid, tid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/wchan", pid, tid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// FD returns what descriptor fd of process pid refers to
// (/proc/<pid>/fd/<fd>): a path, or "pipe:[inode]" for a pipe.
func FD(pid int, fd int64) (string, error) {
	return os.Readlink(fmt.Sprintf("/proc/%d/fd/%d", pid, fd))
}

// PipeLink returns what FD reads for a descriptor of the pipe of which f
// is an end, "pipe:[inode]"; "" if unknown. It does not put f in blocking
// mode (it does not call f.Fd), so deadlines on f keep working.
func PipeLink(f *os.File) string {
	if f == nil {
		return ""
	}
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

// Descendants returns the processes descended from pid (its children,
// theirs, and so on), breadth first, at most limit of them. It reads the
// kernel's lists of each thread's children (/proc/<pid>/task/*/children)
// where the kernel keeps them; where it does not (a kernel built without
// CONFIG_PROC_CHILDREN), it reads the parent of every process in /proc
// once. A process whose parent ended (reparented) is no longer a
// descendant; neither is one started between the reads.
func Descendants(pid, limit int) []int {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid)); errors.Is(err, os.ErrNotExist) {
		return descendantsByParent(pid, limit)
	}
	var out []int
	for i, p := 0, pid; len(out) < limit; i++ {
		tids, _ := Threads(p)
		for _, tid := range tids {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", p, tid))
			for _, w := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(w); err == nil && len(out) < limit {
					out = append(out, c)
				}
			}
		}
		if i >= len(out) {
			break
		}
		p = out[i]
	}
	return out
}

// descendantsByParent is Descendants from the parent of every process.
func descendantsByParent(pid, limit int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if st, ok := ReadStat(p); ok {
			children[st.PPID] = append(children[st.PPID], p)
		}
	}
	var out []int
	for i, p := 0, pid; len(out) < limit; i++ {
		slices.Sort(children[p])
		for _, c := range children[p] {
			if len(out) < limit {
				out = append(out, c)
			}
		}
		if i >= len(out) {
			break
		}
		p = out[i]
	}
	return out
}

// StatusKB returns a field of process pid's /proc/<pid>/status counted in
// kB, such as VmHWM (its peak resident set size), RssAnon or RssFile.
func StatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// LoadAverage returns the machine's 1-, 5- and 15-minute load averages
// (/proc/loadavg).
func LoadAverage() ([3]float64, error) {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l, err
	}
	if _, err := fmt.Sscan(string(b), &l[0], &l[1], &l[2]); err != nil {
		return l, fmt.Errorf("/proc/loadavg: %w", err)
	}
	return l, nil
}

// CPUModel returns the model name of the machine's first CPU
// (/proc/cpuinfo), or "" if it does not say.
func CPUModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Stopped reports whether every thread of process pid is stopped (state T
// or t in /proc/<pid>/task/*/stat); known is false where that cannot be
// read.
func Stopped(pid int) (stopped, known bool) {
	tids, err := Threads(pid)
	if err != nil || len(tids) == 0 {
		return false, false
	}
	for _, tid := range tids {
		st, ok := ReadThreadStat(pid, tid)
		if !ok {
			continue // the thread ended
		}
		if st.State != 'T' && st.State != 't' {
			return false, true
		}
	}
	return true, true
}

// Identify returns the ID of the process pid; ok is false if there is none.
func Identify(pid int) (ID, bool) {
	st, ok := ReadStat(pid)
	return ID{pid, st.Start}, ok
}

// Running reports whether the process id names still runs: it exists with
// the same start time and is not a zombie (ended, not yet reaped).
func (id ID) Running() bool {
	st, ok := ReadStat(id.PID)
	return ok && st.Start == id.Start && st.State != 'Z' && st.State != 'X'
}

// Group returns the process group of the process id names, 0 if it is gone.
func (id ID) Group() int {
	st, ok := ReadStat(id.PID)
	if !ok || st.Start != id.Start {
		return 0
	}
	return st.Group
}

// Find lists the running processes other than this one that have an open
// descriptor on the pipe f (inherited stdout or stderr, say), or whose
// environment holds the word env (KEY=value), if env is not empty.
func Find(f *os.File, env string) []ID {
	link := PipeLink(f)
	ents, _ := os.ReadDir("/proc")
	var out []ID
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if (link != "" && holds(pid, link)) || (env != "" && hasEnv(pid, env)) {
			if id, ok := Identify(pid); ok && id.Running() {
				out = append(out, id)
			}
		}
	}
	return out
}

// holds reports whether process pid has a descriptor whose link is link.
func holds(pid int, link string) bool {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && l == link {
			return true
		}
	}
	return false
}

func hasEnv(pid int, env string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	return err == nil && slices.Contains(strings.Split(string(b), "\x00"), env)
}

// HasOpen reports whether process pid holds a descriptor open on the file
// fi describes (the same device and inode); known is false where that
// cannot be read (another user's process). A pid that names no process
// holds nothing, and that is known.
func HasOpen(pid int, fi os.FileInfo) (open, known bool) {
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		_, serr := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return false, os.IsNotExist(serr)
	}
	for _, fd := range fds {
		if st, err := os.Stat(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); err == nil && os.SameFile(st, fi) {
			return true, true
		}
	}
	return false, true
}
