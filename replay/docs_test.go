package replay_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// TestCorrectSession is docs/replay.md's -same snippet: a record of a
// correct session compared with what the server sends (here the fake,
// which the record was made with).
func TestCorrectSession(t *testing.T) {
	replay.TestServer(t, mcptest.Helper("fake"), "testdata/session.ndjson", replay.Same(),
		replay.Redact("params.arguments.text", "result.content.*.text"), // as the record was redacted
		replay.Ignore("result.structuredContent.generatedAt"))           // volatile fields
}
