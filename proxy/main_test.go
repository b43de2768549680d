package proxy_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// mcptest.Main registers the helpers and runs goleak.VerifyTestMain.
func TestMain(m *testing.M) { mcptest.Main(m) }
