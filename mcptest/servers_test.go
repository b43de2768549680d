package mcptest_test

import (
	"context"
	"io"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/mcptest/internal/testserver"
)

// TestMain registers the helpers and runs goleak.VerifyTestMain (mcptest.Main).
// The tests mostly wait (a server's pace, the bounds a stalled peer runs
// out), so unless -parallel is given four per CPU run at once, and two
// under the race detector, where they compute more (testkit.ParallelForWaits).
// TestMainExitsWithoutRaceSleep runs the test binary as its child with
// mainExitEnv set: there it exits as mcptest.Main's own (or os.Exit's).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4, 2)
	switch os.Getenv(mainExitEnv) {
	case "main":
		mcptest.Main(m)
	case "os.Exit":
		mcptest.Main(m, goleak.Cleanup(os.Exit))
	default:
		mcptest.Main(m, goleak.Cleanup(testkit.Exit))
	}
}

func init() {
	mcptest.RegisterHelper("test", func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
		return testserver.New(mcptest.HelperArgs(), true)(ctx, in, out, errw)
	})
}

// target returns the test server (testserver.New: its options and tools)
// with opts as an in-process or a child target.
func target(tb testing.TB, child bool, opts ...string) mcptest.Target {
	if child {
		return childTarget(tb, opts...)
	}
	return mcptest.InProcess(testserver.New(opts, false))
}

type (
	io_ReadCloser  = io.ReadCloser
	io_WriteCloser = io.WriteCloser
	io_Writer      = io.Writer
)
