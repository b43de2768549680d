package assertions_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// BenchmarkCheckServer times the whole server battery against the good
// fake, in-process and as a child process.
func BenchmarkCheckServer(b *testing.B) {
	testkit.EachWayB(b, func(b *testing.B, child bool) {
		target := target(b, child)
		for b.Loop() {
			rep := assertions.CheckServer(b.Context(), target, fakeConfig())
			if rep.Count(assertions.Fail) > 0 {
				b.Fatalf("the good fake failed:\n%s", rep)
			}
		}
	})
}
