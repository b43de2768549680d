//go:build unix

package proxy_test

import (
	"os"
	"syscall"

	"github.com/mcpstdio/mcpstdio/proxy"
)

func killSelf() { _ = syscall.Kill(syscall.Getpid(), syscall.SIGKILL) }

// nonBlockingStdio returns the process's stdin, stdout and stderr in
// non-blocking mode, as `mcpstdio proxy` uses them.
func nonBlockingStdio() proxy.Streams {
	for fd := range 3 {
		_ = syscall.SetNonblock(fd, true)
	}
	return proxy.Streams{Stdin: os.NewFile(0, "stdin"), Stdout: os.NewFile(1, "stdout"), Stderr: os.NewFile(2, "stderr")}
}
