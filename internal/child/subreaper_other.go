//go:build !linux

package child

import (
	"errors"
	"time"
)

// BecomeSubreaper: only Linux has child subreapers.
func BecomeSubreaper() error { return errors.ErrUnsupported }

// Subreaper: only Linux has child subreapers.
func Subreaper() bool { return false }

// Reap: nothing is adopted here, so there is nothing to reap.
func Reap(int, time.Duration) bool { return false }
