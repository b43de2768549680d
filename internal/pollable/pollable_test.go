package pollable_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }
