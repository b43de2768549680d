//go:build !linux

package assertions

import (
	"errors"
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = false

func peakMemoryKB(int) (int64, error) {
	return 0, fmt.Errorf("peak memory: %w", errors.ErrUnsupported)
}

// processTree: without /proc, a server's CPU time and the processes it
// started cannot be seen; the cancel criteria then judge by the wire alone.
func processTree(int) (time.Duration, map[int]string, map[string][2]time.Duration, bool) {
	return 0, nil, nil, false
}

// threadsSeen: without /proc, no server's threads can be seen.
func threadsSeen(*mcptest.Session) bool { return false }
