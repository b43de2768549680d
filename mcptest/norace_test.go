//go:build !race

package mcptest_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

const raceEnabled = false

// big is the size of the blocked writer's response: the 8 MiB of the
// article this project grew from.
const big = 8 << 20

// childTarget is the test server with opts as a child process: the test
// binary re-executed (mcptest.Helper).
func childTarget(_ testing.TB, opts ...string) mcptest.Target { return mcptest.Helper("test", opts...) }
