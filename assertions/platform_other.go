//go:build !linux

package assertions

import (
	"errors"
	"fmt"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = false

func peakMemoryKB(int) (int64, error) {
	return 0, fmt.Errorf("peak memory: %w", errors.ErrUnsupported)
}

// threadsSeen: without /proc, no server's threads can be seen.
func threadsSeen(*mcptest.Session) bool { return false }
