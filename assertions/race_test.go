//go:build race

package assertions_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// childFake is the fake configured by args as a child process. Under the
// race detector it is the fake built once without it (testdata/fake): the
// batteries start it about 14 times each, and a race-enabled process takes
// about ten times the CPU to start (under load, a third of a second each).
// The in-process fake runs the same code under the detector.
func childFake(tb testing.TB, args ...string) mcptest.Target {
	return mcptest.GoBuild(tb, "./testdata/fake", args...)
}
