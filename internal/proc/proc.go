// Package proc reads what Linux /proc shows of other processes, for the
// diagnoses and the evidence that need it. Elsewhere its functions report
// that they cannot tell.
package proc
