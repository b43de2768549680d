// Command testserver is mcptest's test server as a process of its own,
// serving stdio with its options as arguments, as mcptest.Helper("test",
// args...) does in the test binary: an error is printed and exits 1.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpstdio/mcpstdio/mcptest/internal/testserver"
)

func main() {
	if err := testserver.New(os.Args[1:], true)(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "testserver: %v\n", err)
		os.Exit(1)
	}
}
