package assertions

import (
	"context"
	"io"
	"os/exec"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// fakeHelper is the name under which the package registers the fake as an
// mcptest helper, for the hosts under test to start as a child of the test
// binary. The registration is a map entry and nothing else: it runs only
// when mcptest.Main (or mcptest.ServeHelper) in the package's TestMain
// finds the test binary re-executed as that helper.
const fakeHelper = "mcpstdio-assertions-fake"

func init() {
	mcptest.RegisterHelper(fakeHelper, func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// fakeCommand returns the command that runs the fake with flags, killed
// when ctx ends: the test binary re-executed as the helper fakeHelper. The
// package's own tests under the race detector put a fake built without it
// in its place (export_test.go): a race-enabled child costs about ten
// times the CPU to start, and the host tests start the fake 90 times.
var fakeCommand = func(ctx context.Context, flags ...string) (*exec.Cmd, error) {
	return mcptest.HelperCommand(ctx, fakeHelper, flags...)
}
