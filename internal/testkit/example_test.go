package testkit_test

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// The subtests EachWay runs, in order.
func ExampleEachWay() {
	fmt.Println(testkit.Ways)
	// Output: [in-process child]
}
