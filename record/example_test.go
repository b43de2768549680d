package record_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcpstdio/mcpstdio/record"
)

// Example reads the pinned sample record and prints the frames the host
// sent, and the verdicts at the end.
func Example() {
	f, err := os.Open(filepath.Join("testdata", "sample.ndjson"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	err = record.Read(f, func(e record.Event) error {
		switch {
		case e.Ev == record.EvHeader:
			fmt.Println("server:", e.Header.Argv)
		case e.Ev == record.EvFrame && e.Dir == record.DirIn:
			fmt.Println("host sent:", e.Kind, string(e.ID), e.Method, e.N, "bytes")
		case e.Ev == record.EvSummary:
			fmt.Println("requests:", e.Metrics.Requests, "responses:", e.Metrics.Responses)
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
	}
	// Output:
	// server: [./myserver --stdio]
	// host sent: request 1 initialize 151 bytes
	// host sent: notification  notifications/initialized 54 bytes
	// host sent: request 2 tools/call 130 bytes
	// host sent: request 3 tools/call 112 bytes
	// host sent: notification  notifications/cancelled 95 bytes
	// requests: 3 responses: 3
}
