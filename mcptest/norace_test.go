//go:build !race

package mcptest_test

const raceEnabled = false
