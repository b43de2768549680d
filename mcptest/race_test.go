//go:build race

package mcptest_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// raceEnabled: the race detector slows byte-by-byte work (JSON validation)
// about fivefold; tests that push hundreds of MiB through the host size
// themselves down under it, and CI runs them at full size without it too.
const raceEnabled = true

// big is the size of the blocked writer's response: the 8 MiB of the article
// this project grew from, and under the race detector 2 MiB, still 32 times
// the default pipe and twice TestBlockedWriterOverLimit's 1 MiB limit (moving
// 8 MiB through the host costs about a CPU-second under the detector; .ci/run
// runs the tests that send it at 8 MiB without it).
const big = 2 << 20

// childTarget is the test server with opts as a child process. Under the
// race detector it is the server built once without it
// (testdata/testserver): a race-enabled child takes several times the CPU
// to start and to move its bytes (the big responses), and the in-process
// way runs the same server code under the detector.
func childTarget(tb testing.TB, opts ...string) mcptest.Target {
	return mcptest.GoBuild(tb, "./testdata/testserver", opts...)
}
