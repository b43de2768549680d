//go:build !race

package testkit

// raceDetector reports whether the race detector is built in.
const raceDetector = false
