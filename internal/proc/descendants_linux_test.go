//go:build linux

package proc

import (
	"bufio"
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
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & echo ready; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skip("no sh:", err)
	}
	defer func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() }()
	// Both sleeps are forked once the shell has said so; nothing else
	// this test's process starts meanwhile.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("the shell's first line: %q, %v; want ready", line, err)
	}
	a, b := Descendants(self, 100), descendantsByParent(self, 100)
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Errorf("Descendants(self) = %v by the children lists, %v by the parents; want the same", a, b)
	}
}
