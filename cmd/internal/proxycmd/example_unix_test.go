//go:build unix

package proxycmd_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
)

// The proxy in front of cat, recording nothing: what the host writes comes
// back exactly, nothing of the proxy's own is written, and the exit status
// is cat's.
func ExampleRun_forward() {
	dir, err := os.MkdirTemp("", "proxycmd-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	var stdout, stderr bytes.Buffer
	host := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	code := proxycmd.Run(context.Background(), "mcpstdio-proxy", []string{"-no-log", "-dir", dir, "--", "cat"}, host, &stdout, &stderr)
	fmt.Print(stdout.String())
	fmt.Println(code, stderr.Len())
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"ping"}
	// 0 0
}
