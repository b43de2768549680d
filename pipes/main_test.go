package pipes_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// childEnv selects a child-process role when the test binary re-executes
// itself, as the os/exec tests do.
const childEnv = "PIPES_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
	case "flood":
		os.Exit(flood())
	default:
		os.Stderr.WriteString("pipes test: unknown child role " + os.Getenv(childEnv) + "\n")
		os.Exit(2)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit))
}

// floodSize is what the "flood" child writes to each of stdout and stderr.
const floodSize = 64 << 20

// flood writes floodSize bytes to stdout and to stderr, interleaved in 1 MiB
// writes, so that a parent that stops draining either would block it.
func flood() int {
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte('a' + i%26)
	}
	for range floodSize / len(chunk) {
		if _, err := os.Stdout.Write(chunk); err != nil {
			return 1
		}
		if _, err := os.Stderr.Write(chunk); err != nil {
			return 1
		}
	}
	return 0
}
