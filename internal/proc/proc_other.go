//go:build !linux

package proc

// CommandLine: without /proc, a process's command line is unknown.
func CommandLine(int) string { return "?" }
