// Package integration runs the mcpstdio release criteria against servers and
// clients built with real third-party MCP SDKs: the official Go SDK
// (github.com/modelcontextprotocol/go-sdk), github.com/mark3labs/mcp-go and,
// through node, the official TypeScript SDK (@modelcontextprotocol/sdk, in
// the Node project ts/, installed with `npm ci`; see tssdk.go).
//
// It is a nested module so that users of mcpstdio never download the SDKs.
// Its tests assert the verdicts observed for each SDK version (see
// VERDICTS.md): a version bump that changes what an SDK does under
// back-pressure, cancellation or oversized frames shows up as a test failure.
//
// The servers offer the tools the criteria need: big ({"bytes": N} returns N
// bytes of text), slow ({"steps", "intervalMs"}, progress notifications when
// the request has a progressToken, stops on cancel), echo ({"text"}) and
// search ({"query", "total"}, a bounded page with nextCursor).
package integration

import (
	"fmt"
	"strings"
	"time"
)

// Defaults and bounds of the tools' arguments.
const (
	maxBigBytes   = 64 << 20 // big refuses more, so a typo cannot exhaust memory
	searchPage    = 20       // items per search page
	defaultSteps  = 10
	defaultTickMs = 10
)

// bigText returns n bytes of ASCII text.
func bigText(n int) (string, error) {
	if n < 0 || n > maxBigBytes {
		return "", fmt.Errorf("big: bytes must be in [0, %d], got %d", maxBigBytes, n)
	}
	return strings.Repeat("x", n), nil
}

// searchResult is the structured result of search: a bounded page that says
// how to continue, the result contract of the seed article.
type searchResult struct {
	Items         []searchItem `json:"items"`
	NextCursor    string       `json:"nextCursor,omitempty"`
	Truncated     bool         `json:"truncated"`
	TotalEstimate int          `json:"totalEstimate"`
}

type searchItem struct {
	ID    int    `json:"id"`
	Title string `json:"title"`
}

// search returns the first page of total matching records.
func search(query string, total int) searchResult {
	total = max(total, 0)
	n := min(total, searchPage)
	res := searchResult{Items: make([]searchItem, n), TotalEstimate: total}
	for i := range n {
		res.Items[i] = searchItem{ID: i + 1, Title: fmt.Sprintf("record %d matching %q", i+1, query)}
	}
	if total > n {
		res.Truncated = true
		res.NextCursor = fmt.Sprint(n)
	}
	return res
}

func (r searchResult) summary() string {
	return fmt.Sprintf("Returned %d of %d matching records", len(r.Items), r.TotalEstimate)
}

// slowArgs are the arguments of slow, with defaults.
func slowArgs(steps, intervalMs int) (int, time.Duration) {
	if steps <= 0 {
		steps = defaultSteps
	}
	if intervalMs <= 0 {
		intervalMs = defaultTickMs
	}
	return steps, time.Duration(intervalMs) * time.Millisecond
}
