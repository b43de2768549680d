package benchproxy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpstdio/mcpstdio/internal/benchproxy"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// A command behind the proxy: its output passes through, byte for byte.
func ExampleRun() {
	var out strings.Builder
	host := proxy.Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: os.Stderr}
	err := benchproxy.Run(context.Background(), exec.Command("go", "version"), host, "")
	fmt.Println(err, strings.HasPrefix(out.String(), "go version go"))
	// Output: <nil> true
}
