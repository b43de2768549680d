//go:build linux

package proc

import (
	"os"
	"strconv"
	"strings"
)

// Children lists the children of process ppid, running or ended and not
// yet reaped (zombies, which Running reports as not running).
func Children(ppid int) []ID {
	ents, _ := os.ReadDir("/proc")
	var out []ID
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		// After the command's name: state, ppid, ...
		if f := strings.Fields(string(b[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			if id, ok := Identify(pid); ok {
				out = append(out, id)
			}
		}
	}
	return out
}
