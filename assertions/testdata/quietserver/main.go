// Command quietserver serves the assertions tests' quiet server (package
// quiet) on its stdio, configured by its arguments: the quiet server as a
// child process built without the race detector.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/mcpstdio/mcpstdio/assertions/testdata/quiet"
)

func main() {
	if err := quiet.Server(os.Args[1:])(context.Background(), os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "quiet: %v\n", err)
		os.Exit(1)
	}
}
