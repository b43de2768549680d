//go:build race

package mcptest_test

// raceEnabled: the race detector slows byte-by-byte work (JSON validation)
// about fivefold; tests that push hundreds of MiB through the host size
// themselves down under it, and CI runs them at full size without it too.
const raceEnabled = true
