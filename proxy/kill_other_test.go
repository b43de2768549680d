//go:build !unix

package proxy_test

import "os"

func killSelf() { os.Exit(137) }

func nonBlockingStdio() Streams {
	return Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}
