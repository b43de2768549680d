//go:build !race

package assertions_test

import (
	"context"
	"io"
	"testing"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// childFake is the fake configured by args as a child process: without the
// race detector, this test binary re-executed, as cheap to start as the
// fake built on its own (race_test.go builds one under the detector).
func childFake(_ testing.TB, args ...string) mcptest.Target {
	return mcptest.Helper("fake", args...)
}
