//go:build !linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// CommandLine: without /proc, a process's command line is unknown.
func CommandLine(int) string { return "?" }

// ReadStat: without /proc, nothing is known of a process.
func ReadStat(int) (Stat, bool) { return Stat{}, false }

// ReadThreadStat: without /proc, nothing is known of a thread.
func ReadThreadStat(int, int) (Stat, bool) { return Stat{}, false }

// Threads: without /proc, a process's threads are unknown.
func Threads(int) ([]int, error) { return nil, fmt.Errorf("proc: threads: %w", errors.ErrUnsupported) }

// Schedstat: without /proc, a thread's run time is unknown.
func Schedstat(int, int) (run, wait time.Duration, ok bool) { return 0, 0, false }

// Syscall: without /proc, a thread's system call is unknown.
func Syscall(int, int) (nr, arg0 int64, ok bool) { return -1, -1, false }

// Wchan: without /proc, what a thread waits in is unknown.
func Wchan(int, int) string { return "" }

// FD: without /proc, a process's descriptors are unknown.
func FD(int, int64) (string, error) { return "", fmt.Errorf("proc: fd: %w", errors.ErrUnsupported) }

// PipeLink: without /proc, there is nothing to compare a pipe with.
func PipeLink(*os.File) string { return "" }

// Descendants: without /proc, a process's descendants are unknown.
func Descendants(int, int) []int { return nil }

// StatusKB: without /proc, a process's memory is unknown.
func StatusKB(int, string) (int64, error) {
	return 0, fmt.Errorf("proc: status: %w", errors.ErrUnsupported)
}

// LoadAverage: without /proc, the load average is unknown.
func LoadAverage() ([3]float64, error) {
	return [3]float64{}, fmt.Errorf("proc: load average: %w", errors.ErrUnsupported)
}

// CPUModel: without /proc, the CPU's model is unknown.
func CPUModel() string { return "" }

// Stopped: without /proc, whether a process is stopped is unknown.
func Stopped(int) (stopped, known bool) { return false, false }

// Identify: without /proc, no process can be identified.
func Identify(pid int) (ID, bool) { return ID{PID: pid}, false }

// Running: without /proc, a process is never known to run.
func (ID) Running() bool { return false }

// Find: without /proc, no process is found.
func Find(*os.File, string) []ID { return nil }

// Group: without /proc, a process's group is unknown.
func (ID) Group() int { return 0 }

// Children: without /proc, no child is found.
func Children(int) []ID { return nil }

// HasOpen cannot tell here: known is false.
func HasOpen(int, os.FileInfo) (open, known bool) { return false, false }
