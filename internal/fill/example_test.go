package fill_test

import (
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/fill"
)

func ExampleDefault() {
	chunk, stuck := 0, 3*time.Second
	fill.Default(&chunk, 64<<10)
	fill.Default(&stuck, time.Second)
	fmt.Println(chunk, stuck)
	// Output: 65536 3s
}
