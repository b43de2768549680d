package proxy_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"go.uber.org/goleak"
)

// mcptest.Main registers the helpers and runs goleak.VerifyTestMain.
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }
