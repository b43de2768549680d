package cancelrule

import (
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// treeLimit bounds the descendants of a server the rule looks at.
const treeLimit = 1024

// cpuRun returns the time pid's threads have run on a CPU (schedstat, in
// nanoseconds, where stat counts 10ms ticks), and adds each thread's run
// time and run-queue wait to threads; ok is false where schedstat is not
// kept.
func cpuRun(pid int, threads map[string][2]time.Duration) (time.Duration, bool) {
	tids, err := proc.Threads(pid)
	if err != nil {
		return 0, false
	}
	var d time.Duration
	seen := false
	for _, tid := range tids {
		run, wait, ok := proc.Schedstat(pid, tid)
		if !ok {
			continue // the thread ended
		}
		seen = true
		d += run
		threads[fmt.Sprintf("%d/%d", pid, tid)] = [2]time.Duration{run, wait}
	}
	return d, seen
}

// runOr returns pid's CPU time from schedstat, or cpu where it is not kept.
func runOr(pid int, cpu time.Duration, threads map[string][2]time.Duration) time.Duration {
	if d, ok := cpuRun(pid, threads); ok {
		return d
	}
	return cpu
}

// processTree returns the CPU time used so far by pid and every process
// descended from it (the server and what it started, including what has
// exited and been reaped), each live thread's run time and run-queue wait,
// and the live descendants with their command lines. ok is false where
// /proc cannot tell (off Linux: the rule then judges by the wire alone).
func processTree(pid int) (cpu time.Duration, descendants map[int]string, threads map[string][2]time.Duration, ok bool) {
	if pid <= 0 {
		return 0, nil, nil, false
	}
	root, ok := proc.ReadStat(pid)
	if !ok {
		return 0, nil, nil, false
	}
	threads = map[string][2]time.Duration{}
	cpu = runOr(pid, root.CPU, threads) + root.Reaped
	descendants = map[int]string{}
	for _, p := range proc.Descendants(pid, treeLimit) {
		st, ok := proc.ReadStat(p)
		if !ok {
			continue // it ended
		}
		descendants[p] = proc.CommandLine(p)
		cpu += runOr(p, st.CPU, threads) + st.Reaped
	}
	return cpu, descendants, threads, true
}
