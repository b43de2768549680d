// Command fake serves fakeserver on its stdio, configured by its arguments
// (fakeserver.ParseArgs): the fake as a child process built without the
// race detector, for the tests whose batteries start it many times.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

func main() {
	if err := fakeserver.ServeStdio(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "fake: %v\n", err)
		os.Exit(1)
	}
}
