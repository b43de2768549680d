package bound_test

import (
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// A test with 60s left bounds its waits 5s earlier; one with 20s left, a
// tenth earlier.
func ExampleMargin() {
	now := time.Now()
	fmt.Println(now.Add(60 * time.Second).Sub(bound.Margin(now.Add(60 * time.Second))).Round(time.Second))
	fmt.Println(now.Add(20 * time.Second).Sub(bound.Margin(now.Add(20 * time.Second))).Round(time.Second))
	// Output:
	// 5s
	// 2s
}
