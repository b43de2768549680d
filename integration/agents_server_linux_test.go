//go:build linux

package integration_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TestAgentServers runs the server criteria that need no model against the
// agent CLI that is an MCP server too, offline: Claude Code's `claude mcp
// serve` (no login needed to list and call its tools), with a HOME and
// TMPDIR of its own. Its Bash tool is the Large call: a response of 200 KB
// that blocks the server's 16 KiB stdout pipe. The verdicts are those
// measured by hand with a raw harness (docs/hosts.md, "Agent CLIs").
func TestAgentServers(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("agents", "claude"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "node_modules", ".bin", "claude")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Claude Code needs `npm ci` in integration/agents/claude: %v", err)
	}
	t.Parallel()
	root := t.TempDir()
	home, tmp := filepath.Join(root, "home"), filepath.Join(root, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	target := mcptest.Command("env", "HOME="+home, "TMPDIR="+tmp, bin, "mcp", "serve")
	rep := assertions.CheckServer(t.Context(), target, assertions.ServerConfig{
		Large: &assertions.ToolCall{Name: "Bash", Arguments: map[string]any{"command": `head -c 200000 /dev/zero | tr '\000' x`}},
		Run:   regexp.MustCompile(`^(crlf-input|host-gone)$`),
	})
	want := map[string]assertions.Verdict{
		"crlf-input": assertions.Pass, // both requests answered, the session goes on
		"host-gone":  assertions.Pass, // exit 0 within 30 ms of its stdout's reader closing
	}
	if diff := cmp.Diff(want, rep.Verdicts()); diff != "" {
		t.Errorf("claude mcp serve: verdicts mismatch (-want +got):\n%s\n%s", diff, rep)
	}
	t.Logf("\n%s", rep)
	if left := leftovers(root, 15*time.Second); len(left) > 0 {
		t.Errorf("processes left running (killed now): %v", left)
	}
}
