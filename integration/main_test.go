package integration_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// The SDK servers as helper children of this test binary.
func init() {
	mcptest.RegisterHelper("go-sdk", integration.GoSDKServer())
	mcptest.RegisterHelper("mcp-go", integration.MCPGoServer())
	mcptest.RegisterHelper("mcp-go-loop", integration.MCPGoLoopServer())
}

// TestMain serves the helper children, and runs the tests with a state
// directory of their own (testkit.PrivateState): the proxies they run
// write no status file in the user's.
func TestMain(m *testing.M) {
	mcptest.ServeHelper()
	if err := testkit.PrivateState(); err != nil {
		panic(err)
	}
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}
