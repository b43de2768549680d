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

// TestMain serves the helper children (the quiet server, the fake for the
// host criteria, and without the race detector the fake for the server
// criteria, childFake) and otherwise runs the tests under
// goleak.VerifyTestMain.
//
// The tests mostly wait, not compute: observation windows, a host's own
// timeout, the bounds a misbehaving server runs out. Without the race
// detector, and unless -parallel is given, four per CPU run at once rather
// than go test's one (testkit.ParallelForWaits).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4)
	mcptest.Main(m, goleak.Cleanup(func(code int) {
		removeBuilt()
		testkit.Exit(code)
	}))
}
