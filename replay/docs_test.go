package replay_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// TestFieldHang is docs/replay.md's snippet: a recorded session played
// against a server (here the fake, which the record was made with).
func TestFieldHang(t *testing.T) {
	replay.TestServer(t, mcptest.Helper("fake"), "testdata/session.ndjson",
		replay.Redact("params.arguments.text", "result.content.*.text"), // as the record was redacted
		replay.Ignore("result.structuredContent.generatedAt"))           // volatile fields
}
