package proxy_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// mcptest.Main registers the helpers and runs goleak.VerifyTestMain.
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }
