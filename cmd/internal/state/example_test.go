package state_test

import (
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// ExampleSessionLogName names a new session's record, and its status file.
func ExampleSessionLogName() {
	name := state.SessionLogName(time.Date(2026, 1, 5, 14, 22, 33, 123e6, time.UTC), 4711, "/usr/bin/node")
	fmt.Println(name)
	fmt.Println(name + state.StatusSuffix)
	// Output:
	// 20260105-142233.123-4711-node.ndjson
	// 20260105-142233.123-4711-node.ndjson.status.json
}
