//go:build linux

package watchdog

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// killFor bounds the watchdog's passes over the marked processes once the
// command has died.
const killFor = 2 * time.Second

// Serve, called first thing in main, returns at once unless this process
// was started by Start as a watchdog; then it watches its stdin and exits.
// It ends within killFor of the command's death.
func Serve() {
	marker := os.Getenv(roleEnv)
	if marker == "" {
		return
	}
	serve(os.Stdin, marker)
	os.Exit(0)
}

// told is one process the command told: its start time and a pidfd on it
// (-1 where the kernel has none), which a reused pid cannot fool.
type told struct {
	start uint64
	fd    int
}

// serve reads the command's lines from in until "done" (the command ends
// normally: it returns) or the end of in without it (the command died: it
// kills what it was told of and what carries marker, then returns).
func serve(in io.Reader, marker string) {
	procs := map[int]told{}
	groups := map[int]bool{}
	defer func() {
		for _, t := range procs {
			if t.fd >= 0 {
				unix.Close(t.fd)
			}
		}
	}()
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 1 && f[0] == "done" {
			return
		}
		if len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil || n <= 0 {
			continue
		}
		switch f[0] {
		case "p":
			if len(f) == 3 {
				start, _ := strconv.ParseUint(f[2], 10, 64)
				tell(procs, n, start)
			}
		case "g":
			groups[n] = true
		case "u":
			delete(groups, n)
		}
	}
	kill(procs, groups, marker)
}

// tell records the process pid that started at start, unless it is gone,
// and forgets the told processes that have ended.
func tell(procs map[int]told, pid int, start uint64) {
	for p, t := range procs {
		if t.fd >= 0 && ended(t.fd) {
			unix.Close(t.fd)
			delete(procs, p)
		}
	}
	if old, ok := procs[pid]; ok {
		if old.start == start {
			return
		}
		if old.fd >= 0 {
			unix.Close(old.fd)
		}
		delete(procs, pid)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil && !errors.Is(err, unix.ENOSYS) {
		return // gone
	}
	if err != nil {
		fd = -1
	}
	// Opened after the command saw it: the same process if it started then.
	if st, ok := proc.ReadStat(pid); !ok || st.Start != start {
		if fd >= 0 {
			unix.Close(fd)
		}
		return
	}
	procs[pid] = told{start: start, fd: fd}
}

// ended reports whether the process a pidfd names has ended.
func ended(fd int) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(p, 0)
	return err == nil && n > 0
}

// kill kills (SIGKILL) each told group in which a told or marked process
// still runs (so never a group whose number was reused), each told process
// and, until none is left or killFor has passed, each process that carries
// marker.
func kill(procs map[int]told, groups map[int]bool, marker string) {
	ours := map[int]bool{}
	for _, id := range proc.Find(nil, marker) {
		ours[id.Group()] = true
	}
	for pid, t := range procs {
		if id := (proc.ID{PID: pid, Start: t.start}); id.Running() {
			ours[id.Group()] = true
		}
	}
	for pgid := range groups {
		if ours[pgid] {
			_ = unix.Kill(-pgid, unix.SIGKILL)
		}
	}
	for pid, t := range procs {
		signal(pid, t)
	}
	deadline := time.Now().Add(killFor)
	for time.Now().Before(deadline) {
		left := proc.Find(nil, marker)
		if len(left) == 0 {
			return
		}
		for _, id := range left {
			fd, err := unix.PidfdOpen(id.PID, 0)
			if err != nil && !errors.Is(err, unix.ENOSYS) {
				continue
			}
			if err != nil {
				fd = -1
			}
			signal(id.PID, told{start: id.Start, fd: fd})
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		time.Sleep(10 * time.Millisecond) // a killed process's end has no event to wait on here
	}
}

// signal sends SIGKILL to the told process pid: through its pidfd, or,
// without one, by pid if the process that runs there started when told.
func signal(pid int, t told) {
	if t.fd >= 0 {
		_ = unix.PidfdSendSignal(t.fd, unix.SIGKILL, nil, 0)
		return
	}
	if (proc.ID{PID: pid, Start: t.start}).Running() {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
}
