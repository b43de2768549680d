//go:build linux

package cancelrule

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// procStat is what /proc/<pid>/stat says of one process.
type procStat struct {
	ppid int
	cpu  time.Duration // utime + stime
	dead time.Duration // cutime + cstime: its reaped children's
}

// cpuRun returns the time pid's threads have run on a CPU
// (/proc/<pid>/task/*/schedstat, in nanoseconds, where /proc/<pid>/stat
// counts 10ms ticks), and adds each thread's run time and run-queue wait to
// threads; ok is false where schedstat is not kept.
func cpuRun(pid int, threads map[string][2]time.Duration) (time.Duration, bool) {
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
		d += time.Duration(run)
		threads[fmt.Sprintf("%d/%s", pid, e.Name())] = [2]time.Duration{time.Duration(run), time.Duration(wait)}
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

// runOr returns pid's CPU time from schedstat, or cpu where it is not kept.
func runOr(pid int, cpu time.Duration, threads map[string][2]time.Duration) time.Duration {
	if d, ok := cpuRun(pid, threads); ok {
		return d
	}
	return cpu
}

// processTree returns the CPU time used so far by pid and every process
// descended from it, each live thread's run time and run-queue wait (the server and what it started, including what has
// exited and been reaped), and the live descendants with their command
// lines. ok is false where /proc cannot tell.
func processTree(pid int) (cpu time.Duration, descendants map[int]string, threads map[string][2]time.Duration, ok bool) {
	if pid <= 0 {
		return 0, nil, nil, false
	}
	root, ok := readProcStat(pid)
	if !ok {
		return 0, nil, nil, false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, nil, nil, false
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
	threads = map[string][2]time.Duration{}
	cpu = runOr(pid, root.cpu, threads) + root.dead
	descendants = map[int]string{}
	for p := range parent {
		for q, hops := parent[p], 0; q > 1 && hops < 64; q, hops = parent[q], hops+1 {
			if q == pid {
				descendants[p] = proc.CommandLine(p)
				cpu += runOr(p, stats[p].cpu, threads) + stats[p].dead
				break
			}
		}
	}
	return cpu, descendants, threads, true
}
