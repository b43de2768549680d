package page

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/human"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// dur formats a duration in microseconds.
func dur(us int64) string { return human.Duration(time.Duration(us) * time.Microsecond) }

// at formats a time since the start for a timeline: "+1.234s".
func at(us int64) string { return fmt.Sprintf("+%.3fs", float64(us)/1e6) }

// size formats a byte count.
var size = human.Size

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
