//go:build !linux

package assertions

import "github.com/mcpstdio/mcpstdio/mcptest"

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = false

// threadsSeen: without /proc, no server's threads can be seen.
func threadsSeen(*mcptest.Session) bool { return false }
