// Package proc reads what Linux /proc shows of other processes, for the
// diagnoses and the evidence that need it. Elsewhere its functions report
// that they cannot tell.
package proc

// ID names one process: its pid and its start time, so that a pid the
// kernel reused is not taken for the process it named.
type ID struct {
	PID   int
	Start uint64 // clock ticks after boot (/proc/<pid>/stat); 0 where unknown
}
