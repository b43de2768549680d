package integration_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// The SDK servers as helper children of this test binary.
func init() {
	mcptest.RegisterHelper("go-sdk", integration.GoSDKServer())
	mcptest.RegisterHelper("mcp-go", integration.MCPGoServer())
	mcptest.RegisterHelper("mcp-go-loop", integration.MCPGoLoopServer())
}

func TestMain(m *testing.M) { mcptest.Main(m) }
