package cmdtest_test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// A TestMain builds the command once; the tests run the binary.
func ExampleBuild() {
	dir, err := os.MkdirTemp("", "cmdtest-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bin, err := cmdtest.Build(dir, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio-proxy", "mcpstdio-proxy")
	if err != nil {
		panic(err)
	}
	out, _ := exec.Command(bin, "-h").CombinedOutput()
	fmt.Println(strings.SplitN(string(out), "\n", 2)[0])
	// Output:
	// usage: mcpstdio-proxy [flags] -- <server command...>
}
