package proxy_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TestMain registers the helpers and runs goleak.VerifyTestMain (mcptest.Main).
// Without the race detector the tests mostly wait (a server's pace, the
// bounds a stalled peer runs out), so unless -parallel is given four per
// CPU run at once; under it they compute, and run at go test's one per CPU
// (testkit.ParallelForWaits).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4, 1)
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}
