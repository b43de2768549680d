//go:build linux

package proc

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
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

// stat returns the state letter, the start time and the process group of
// pid.
func stat(pid int) (state byte, start uint64, pgrp int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 || len(f[0]) != 1 {
		return 0, 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	pgrp, _ = strconv.Atoi(f[2])
	return f[0][0], start, pgrp, err == nil
}

// Stopped reports whether every thread of process pid is stopped (state T
// or t in /proc/PID/task/*/stat); known is false where that cannot be read.
func Stopped(pid int) (stopped, known bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false, false
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		state, _, _, ok := stat(tid)
		if !ok {
			continue // the thread ended
		}
		if state != 'T' && state != 't' {
			return false, true
		}
	}
	return true, true
}

// Identify returns the ID of the process pid; ok is false if there is none.
func Identify(pid int) (ID, bool) {
	_, start, _, ok := stat(pid)
	return ID{pid, start}, ok
}

// Running reports whether the process id names still runs: it exists with
// the same start time and is not a zombie (ended, not yet reaped).
func (id ID) Running() bool {
	state, start, _, ok := stat(id.PID)
	return ok && start == id.Start && state != 'Z' && state != 'X'
}

// Group returns the process group of the process id names, 0 if it is gone.
func (id ID) Group() int {
	_, start, pgrp, ok := stat(id.PID)
	if !ok || start != id.Start {
		return 0
	}
	return pgrp
}

// Find lists the running processes other than this one that have an open
// descriptor on the pipe f (inherited stdout or stderr, say), or whose
// environment holds the word env (KEY=value), if env is not empty.
func Find(f *os.File, env string) []ID {
	var link string
	if f != nil {
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err == nil {
			link = fmt.Sprintf("pipe:[%d]", st.Ino)
		}
	}
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
