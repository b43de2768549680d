package term_test

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/internal/term"
)

func ExampleLine() {
	method := "tools/call\x1b]0;owned\a\nPASS  everything"
	fmt.Println("  FAIL  unknown method " + term.Line(method))
	// Output:
	//   FAIL  unknown method tools/call\x1b]0;owned\x07\nPASS  everything
}
