package child_test

import (
	"fmt"
	"os/exec"
	"syscall"

	"github.com/mcpstdio/mcpstdio/internal/child"
)

// A child that the kernel kills if this process dies (Linux), waited for
// on the thread that started it.
func Example() {
	cmd := exec.Command("go", "env", "GOOS")
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	child.SetDeathSignal(cmd.SysProcAttr)
	done := make(chan error, 1)
	if err := child.Start(cmd, func() { done <- cmd.Wait() }); err != nil {
		fmt.Println("start:", err)
		return
	}
	fmt.Println("exit:", <-done)
	// Output: exit: <nil>
}
