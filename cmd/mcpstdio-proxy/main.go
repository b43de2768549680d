// Command mcpstdio-proxy is "mcpstdio proxy" alone: the same proxy, with
// the same flags, record, status file, help and exit status, in a binary
// that links nothing else (no network, so it is statically linked, no
// probe, no status page, no testing packages), for less memory in the
// process a host runs in place of its server.
//
// Usage:
//
//	mcpstdio-proxy [flags] -- <server command...>
//
// "mcpstdio-proxy -h" describes the flags. "mcpstdio status" shows what
// each running proxy sees, whichever command runs it.
package main

import (
	"context"
	"os"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
)

func main() {
	os.Exit(proxycmd.Run(context.Background(), "mcpstdio-proxy", os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
