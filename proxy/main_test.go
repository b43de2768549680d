package proxy_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

func TestMain(m *testing.M) { mcptest.Main(m) }
