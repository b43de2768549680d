//go:build linux

package assertions

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// pipeCapacitySettable reports whether mcptest.WithPipeCapacity works here.
const pipeCapacitySettable = true

// peakMemoryKB returns a process's peak resident set size (VmHWM) in KiB.
func peakMemoryKB(pid int) (int64, error) {
	if pid <= 0 {
		return 0, errors.New("not a child process")
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, errors.New("no VmHWM in /proc status")
}

// threadsSeen reports whether mcptest can see the server's threads (its
// rule can call it stopped): a child process, on Linux.
func threadsSeen(s *mcptest.Session) bool { return s.PID() > 0 }
