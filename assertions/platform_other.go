//go:build !linux

package assertions

import (
	"errors"
	"fmt"
)

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = false

func peakMemoryKB(int) (int64, error) {
	return 0, fmt.Errorf("peak memory: %w", errors.ErrUnsupported)
}
