package assertions_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// BenchmarkCheckServer times the whole server battery against the good
// fake, in-process and as a child process.
func BenchmarkCheckServer(b *testing.B) {
	for _, path := range []string{"in-process", "child"} {
		b.Run(path, func(b *testing.B) {
			target := targets()[path]
			for b.Loop() {
				rep := assertions.CheckServer(b.Context(), target, fakeConfig())
				if rep.Count(assertions.Fail) > 0 {
					b.Fatalf("the good fake failed:\n%s", rep)
				}
			}
		})
	}
}
