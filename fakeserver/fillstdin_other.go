//go:build !linux

package fakeserver

import (
	"context"
	"errors"
	"fmt"
)

// fillPipe is unsupported here: only Linux lets a process open its own
// stdin pipe for writing.
func fillPipe() (fill, capacity int, err error) {
	return 0, 0, fmt.Errorf("filling stdin's pipe: %w", errors.ErrUnsupported)
}

// waitHangup is never reached here: fillPipe fails first.
func waitHangup(context.Context) bool { return false }
