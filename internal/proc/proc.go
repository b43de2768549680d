// Package proc is the one reader of what Linux /proc shows of processes —
// stat, schedstat, status, syscall, wchan, children, fd links, cmdline and
// environ — for the diagnoses and the evidence of every package that needs
// them, and of the machine (load average, CPU model) for the benchmark
// tool; and the one way to walk a process tree (Descendants). Elsewhere its
// functions report that they cannot tell: false, "?", nil or an error
// wrapping errors.ErrUnsupported.
package proc

import "time"

// ID names one process: its pid and its start time, so that a pid the
// kernel reused is not taken for the process it named.
type ID struct {
	PID   int
	Start uint64 // clock ticks after boot (/proc/<pid>/stat); 0 where unknown
}

// Stat is what /proc/<pid>/stat says of a process, or
// /proc/<pid>/task/<tid>/stat of one of its threads.
type Stat struct {
	State byte // R running or runnable, S or D asleep, T or t stopped, Z zombie, X dead, …
	PPID  int  // the parent's pid
	Group int  // the process group
	// CPU is the user and system time used so far (a thread's own, or the
	// process's threads' together), in clock ticks of 10ms; Reaped the same
	// of the children the process has waited for.
	CPU, Reaped time.Duration
	Start       uint64 // clock ticks after boot
}

// clockTick is the unit of the times in /proc/<pid>/stat (USER_HZ), 100 on
// every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond
