// Package human formats sizes and durations for people to read, the same
// way in the proxy's verdicts and in the pages that show them.
package human

import (
	"fmt"
	"time"
)

// Size formats a byte count: "2.3 MiB", "64 KiB", "815 bytes", "1 byte".
func Size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 10<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// Duration rounds d to what a person needs: whole seconds from 10s, tenths
// of a second from 1s, milliseconds from 1ms, microseconds below.
func Duration(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}
