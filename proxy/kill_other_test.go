//go:build !unix

package proxy_test

import (
	"os"

	"github.com/mcpstdio/mcpstdio/proxy"
)

func killSelf() { os.Exit(137) }

func nonBlockingStdio() proxy.Streams {
	return proxy.Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}
