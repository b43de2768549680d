package integration_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// A server built with the official Go SDK, run in-process on real pipes with
// the SDK's own transport, checked against one criterion.
func ExampleGoSDKServer() {
	rep := assertions.CheckServer(context.Background(), mcptest.InProcess(integration.GoSDKServer()), assertions.ServerConfig{
		Run: regexp.MustCompile(`^(?:era|stdout-clean)$`),
	})
	for _, res := range rep.Results {
		fmt.Println(res.Name, res.Verdict, res.Era)
	}
	// Output:
	// stdout-clean pass 2026-07-28
	// era pass 2026-07-28
}
