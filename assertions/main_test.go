package assertions_test

import (
	"context"
	"io"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// serveFake serves the fake configured by args, in-process.
func serveFake(args []string) mcptest.ServeFunc {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		opts, err := fakeserver.ParseArgs(args)
		if err != nil {
			return err
		}
		return fakeserver.New(opts...).Serve(ctx, stdin, stdout, stderr)
	}
}

// TestMain serves the fake as a helper child (for the server criteria's
// child targets, as "fake", and for the host criteria) and otherwise runs
// the tests under goleak.VerifyTestMain.
//
// The tests mostly wait, not compute: observation windows, a host's own
// timeout, the bounds a misbehaving server runs out. Without the race
// detector, and unless -parallel is given, four per CPU run at once rather
// than go test's one (testkit.ParallelForWaits).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4)
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}
