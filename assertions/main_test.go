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
// given, four per CPU run at once rather than go test's one, two under the
// race detector (testkit.ParallelForWaits): with the children built
// without it, -race -count=5 -parallel 4 with one core kept busy passed
// (26 s a run, 45 s at go test's two). Three per CPU (and 20 of
// TestCheckServerVerdicts' batteries at once rather than 12) took the
// package from 25 to 20 s, but starved an in-process fake under the whole
// suite's -count=5 with one core busy: its progress went on 1.2 s after a
// cancel it had not yet read (cancel-during-work failed, 1 of 30 runs).
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4, 2)
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}
