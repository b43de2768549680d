//go:build race

package pipes_test

// raceEnabled: the tests are built with the race detector, which slows
// them several times; a few size themselves down then (.ci/run runs them
// at full size without it).
const raceEnabled = true
