//go:build !race

package assertions_test

import (
	"context"
	"io"
	"testing"

	quietsrv "github.com/mcpstdio/mcpstdio/assertions/testdata/quiet"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
	mcptest.RegisterHelper("quiet", func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
		return quietsrv.Server(mcptest.HelperArgs())(ctx, in, out, errw)
	})
}

// childFake is the fake configured by args as a child process: without the
// race detector, this test binary re-executed, as cheap to start as the
// fake built on its own (race_test.go builds one under the detector).
func childFake(_ testing.TB, args ...string) mcptest.Target {
	return mcptest.Helper("fake", args...)
}

// quietChild is the quiet server configured by args as a child process,
// this test binary re-executed.
func quietChild(args ...string) mcptest.Target {
	return mcptest.Helper("quiet", args...)
}
