//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
)

// TestDescendantsTwoWays: where the kernel keeps children lists, they and
// the parents of every process give the same descendants.
func TestDescendantsTwoWays(t *testing.T) {
	self := os.Getpid()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d/children", self, self)); errors.Is(err, os.ErrNotExist) {
		t.Skip("this kernel keeps no children lists (CONFIG_PROC_CHILDREN); TestDescendants checks the other way")
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	a, b := Descendants(self, 100), descendantsByParent(self, 100)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("Descendants(self) = %v by the children lists, %v by the parents; want the same", a, b)
	}
}
