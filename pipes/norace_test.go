//go:build !race

package pipes_test

const raceEnabled = false
