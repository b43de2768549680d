package pipes_test

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// A Framer with a limit returns frames up to the limit and reports a longer
// one by size without storing it, then carries on with the next frame.
func ExampleFramer() {
	in := strings.NewReader(`{"id":1}` + "\n" + `{"id":2,"result":"` + strings.Repeat("x", 100) + `"}` + "\n" + `{"id":3}` + "\r\n")
	f := pipes.NewFramer(in, 64)
	for {
		frame, err := f.Next()
		var big *pipes.FrameTooLargeError
		switch {
		case errors.As(err, &big):
			fmt.Printf("too large: %d bytes, starts %.8s\n", big.Size, big.Head)
			continue
		case err != nil:
			fmt.Println("end:", err)
			fmt.Printf("%+v\n", f.Stats())
			return
		}
		fmt.Printf("frame: %s\n", frame)
	}
	// Output:
	// frame: {"id":1}
	// too large: 120 bytes, starts {"id":2,
	// frame: {"id":3}
	// end: EOF
	// {Bytes:140 Frames:2 FrameBytes:16 Largest:8 Terminators:4 EmptyLines:0 Oversized:1 Discarded:120 Truncated:0 Pending:0}
}

// A Capture drains a child's output without ever blocking it, keeping the
// head and the tail.
func ExampleCapture() {
	out := pipes.NewCapture(16)
	cmd := exec.Command("sh", "-c", "seq 1 100000")
	cmd.Stdout = out
	if err := cmd.Run(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.Total(), out.Truncated())
	fmt.Printf("%q\n", out.String())
	// Output:
	// 588895 true
	// "1\n2\n3\n4\n\n[… 588879 bytes dropped …]\n\n100000\n"
}
