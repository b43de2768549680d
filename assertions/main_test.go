package assertions_test

import (
	"context"
	"io"
	"testing"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("fake", serveFake(nil))
}

// serveFake serves the fake configured by args, or in a helper child by
// the args given to mcptest.Helper.
func serveFake(args []string) mcptest.ServeFunc {
	return func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		if mcptest.IsHelper() {
			// As a real server process: with signal handling.
			return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
		}
		opts, err := fakeserver.ParseArgs(args)
		if err != nil {
			return err
		}
		return fakeserver.New(opts...).Serve(ctx, stdin, stdout, stderr)
	}
}

func TestMain(m *testing.M) { mcptest.Main(m) }
