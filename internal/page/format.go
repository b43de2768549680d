package page

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// dur formats microseconds as the proxy's verdicts do: 4m12s, 31s, 2.3s,
// 80ms, 950µs.
func dur(us int64) string {
	d := time.Duration(us) * time.Microsecond
	switch {
	case d >= 10*time.Second:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}

// at formats a time since the start for a timeline: "+1.234s".
func at(us int64) string { return fmt.Sprintf("+%.3fs", float64(us)/1e6) }

// size formats a byte count: 2.3 MiB, 64 KiB, 815 bytes.
func size(n int64) string {
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

// describe names a request: "id 7 (tools/call search)".
func describe(id json.RawMessage, method, tool string) string {
	s := "id " + string(id)
	if method == "" {
		return s
	}
	s += " (" + method
	if tool != "" {
		s += " " + tool
	}
	return s + ")"
}

// dirName says which way a direction goes.
func dirName(d string) string {
	switch d {
	case "in":
		return "host → server"
	case "out":
		return "server → host"
	case "err":
		return "server stderr"
	}
	return d
}
