//go:build linux

package assertions

import "github.com/mcpstdio/mcpstdio/mcptest"

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = true

// threadsSeen reports whether mcptest can see the server's threads (its
// rule can call it stopped): a child process, on Linux.
func threadsSeen(s *mcptest.Session) bool { return s.PID() > 0 }
