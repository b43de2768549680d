//go:build linux

package proc

import (
	"fmt"
	"os"
	"strings"
)

// CommandLine returns process pid's command line, its arguments joined by
// spaces and cut to 120 bytes; "?" if it cannot be read.
func CommandLine(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return "?"
	}
	s := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
