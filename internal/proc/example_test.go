package proc_test

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// A process that cannot be read has the command line "?".
func ExampleCommandLine() {
	fmt.Println(proc.CommandLine(-1))
	// Output: ?
}
