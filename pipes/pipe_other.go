//go:build !linux

package pipes

import (
	"errors"
	"fmt"
	"os"
)

func setCapacity(*os.File, int) (int, error) {
	return 0, fmt.Errorf("pipes: setting pipe capacity: %w", errors.ErrUnsupported)
}

func capacity(*os.File) (int, error) {
	return 0, fmt.Errorf("pipes: reading pipe capacity: %w", errors.ErrUnsupported)
}

func buffered(*os.File) (int, error) {
	return 0, fmt.Errorf("pipes: reading pipe fill level: %w", errors.ErrUnsupported)
}
