package proxycmd_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
)

// A command line without a server command is a usage error: one line on
// stderr, under the command's name, and exit status 2.
func ExampleRun() {
	var stdout, stderr bytes.Buffer
	code := proxycmd.Run(context.Background(), "mcpstdio-proxy", []string{"-no-log"}, strings.NewReader(""), &stdout, &stderr)
	fmt.Print(stderr.String())
	fmt.Println(code)
	// Output:
	// mcpstdio-proxy: no server command: mcpstdio-proxy [flags] -- <server command...> (see mcpstdio-proxy -h)
	// 2
}
