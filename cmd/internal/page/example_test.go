package page_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
)

// Example reads the pinned sample record and prints its blocked writes,
// its requests from sent to delivered, and what was pending at the end.
func Example() {
	f, err := os.Open(filepath.Join("testdata", "sample.ndjson"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	s, err := page.Read(f)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range s.Blocks {
		fmt.Printf("%s: %d bytes blocked from %dµs to %dµs\n", b.Dir, b.N, b.Since, b.End)
	}
	for _, r := range s.Requests {
		fmt.Printf("id %s %s %s: sent %dµs, %s %dµs, cancelled %dµs, late by %dµs\n", r.ID, r.Method, r.Tool, r.Sent, r.State, r.Delivered, r.Cancel, r.LateUS)
	}
	fmt.Println("pending at the end:", len(s.Pending))
	// Output:
	// out: 4096 bytes blocked from 41746µs to 65374µs
	// id 1 initialize : sent 33697µs, delivered 41208µs, cancelled 0µs, late by 0µs
	// id 2 tools/call big: sent 33697µs, delivered 69880µs, cancelled 0µs, late by 0µs
	// id 3 tools/call slow: sent 65052µs, delivered 167037µs, cancelled 71503µs, late by 94814µs
	// pending at the end: 0
}
