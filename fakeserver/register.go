package fakeserver

import (
	"context"
	"io"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// Register registers under name an mcptest helper that serves a Server
// configured from mcptest.HelperArgs(), which are the flags of ParseArgs,
// with the signal handling of ServeStdio. Call it from init in a test
// package whose TestMain calls mcptest.Main, then start the fake as a child
// process with mcptest.Helper(name, flags...); name a report file with
// -report to read the child's Report (ReadReportFile).
func Register(name string) {
	mcptest.RegisterHelper(name, func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		opts, err := ParseArgs(mcptest.HelperArgs())
		if err != nil {
			return err
		}
		return serveProcess(ctx, New(opts...), stdin, stdout, stderr)
	})
}
