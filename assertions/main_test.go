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

// TestMain serves the helper children without the race detector (the
// quiet server, the fakes: race_test.go builds them under it) and
// otherwise runs the tests under goleak.VerifyTestMain.
//
// The tests mostly wait, not compute: observation windows, a host's own
// timeout, the bounds a misbehaving server runs out. Unless -parallel is
// given, four per CPU run at once rather than go test's one, three under
// the race detector (testkit.ParallelForWaits): with the children built
// without it, the package took 25 s at two per CPU and 20 s at three
// (-race, alone, quiet).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4, 3)
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}
