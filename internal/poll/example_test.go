package poll_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// A state with no event: a counter another goroutine raises. Until looks
// at it until it holds, or the context ends.
func ExampleUntil() {
	var n atomic.Int64
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := poll.Until(ctx, "three increments", func() bool { return n.Load() == 3 })
	fmt.Println(err)

	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	err = poll.Until(ctx, "a fourth", func() bool { return n.Load() == 4 })
	fmt.Println(err != nil, err != nil && ctx.Err() != nil)
	// Output:
	// <nil>
	// true true
}
