//go:build linux

package assertions

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = true

// peakMemoryKB returns a process's peak resident set size (VmHWM) in KiB.
func peakMemoryKB(pid int) (int64, error) {
	if pid <= 0 {
		return 0, errors.New("not a child process")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procStat is what /proc/<pid>/stat says of one process.
type procStat struct {
	ppid int
	cpu  time.Duration // utime + stime
	dead time.Duration // cutime + cstime: its reaped children's
}

// cpuDemand returns the time pid's threads have run on a CPU plus the time
// they waited on a run queue to run (/proc/<pid>/task/*/schedstat, in
// nanoseconds): the CPU a process wanted. Unlike CPU time it does not fall
// when other processes load the machine (a busy thread that gets half a
// core waits the other half), so the cancel criteria compare it between
// windows under changing load. ok is false where schedstat is not kept.
func cpuDemand(pid int) (time.Duration, bool) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, false
	}
	var d time.Duration
	for _, e := range ents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, e.Name()))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return 0, false
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		d += time.Duration(run + wait)
	}
	return d, true
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	// The command is in parentheses and may hold anything: the fields
	// start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 { // f[0] is field 3 (state)
		return procStat{}, false
	}
	n := func(k int) int64 { v, _ := strconv.ParseInt(f[k-3], 10, 64); return v }
	return procStat{ppid: int(n(4)), cpu: time.Duration(n(14)+n(15)) * clockTick, dead: time.Duration(n(16)+n(17)) * clockTick}, true
}

// demandOr returns pid's CPU demand, or cpu where schedstat is not kept.
func demandOr(pid int, cpu time.Duration) time.Duration {
	if d, ok := cpuDemand(pid); ok {
		return d
	}
	return cpu
}

// processTree returns the CPU demand so far (see cpuDemand; CPU time where
// schedstat is not kept) of pid and every process descended from it (the server and what it started, including what has
// exited and been reaped), and the live descendants with their command
// lines. ok is false where /proc cannot tell.
func processTree(pid int) (cpu time.Duration, descendants map[int]string, ok bool) {
	if pid <= 0 {
		return 0, nil, false
	}
	root, ok := readProcStat(pid)
	if !ok {
		return 0, nil, false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, false
	}
	parent := map[int]int{}
	stats := map[int]procStat{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		if st, ok := readProcStat(p); ok {
			parent[p] = st.ppid
			stats[p] = st
		}
	}
	cpu = demandOr(pid, root.cpu) + root.dead
	descendants = map[int]string{}
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				descendants[p] = proc.CommandLine(p)
				cpu += demandOr(p, stats[p].cpu) + stats[p].dead
				break
			}
		}
	}
	return cpu, descendants, true
}
