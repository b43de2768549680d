// Package history_test checks the stdio criteria across releases of three
// MCP SDKs: the official Go SDK (go-sdk), mark3labs/mcp-go and the official
// TypeScript SDK. For each stdio fix it runs the same small server or
// client, built against the last release without the fix and the first with
// it, through the server criteria (assertions.CheckServer, what `mcpstdio
// probe` runs) or the host criteria (`mcpstdio hostprobe`), and asserts that
// the verdicts differ exactly on the criteria the fix is about.
// docs/sdk-history.md is generated from the same table and checked against
// it (TestSDKHistoryDoc).
//
// The programs are pinned per release: go/pins/SDK-VERSION.mod and .sum
// (built with go build -modfile, offline from the module cache or from the
// module proxy), and ts/sdk-VERSION/package-lock.json (installed there with
// npm ci; the TypeScript pairs skip, saying so, without it).
package history_test

import (
	"testing"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

func TestMain(m *testing.M) { mcptest.Main(m) }
