//go:build !linux

package proc

import "os"

// CommandLine: without /proc, a process's command line is unknown.
func CommandLine(int) string { return "?" }

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

// HasOpen cannot tell here: known is false.
func HasOpen(int, os.FileInfo) (open, known bool) { return false, false }
