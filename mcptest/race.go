//go:build race

package mcptest

// raceDetector reports whether the race detector is built in.
const raceDetector = true
