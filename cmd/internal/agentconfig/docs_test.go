package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocsExamples checks the examples of docs/config.md: its JSON and TOML
// blocks come in pairs, a file and what "mcpstdio wrap -dir
// /var/log/mcpstdio" with mcpstdio in /usr/local/bin makes of it; unwrap
// gives the file back.
func TestDocsExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	type block struct{ lang, text string }
	var blocks []block
	rest := string(b)
	for {
		i := strings.Index(rest, "\n```")
		if i < 0 {
			break
		}
		rest = rest[i+4:]
		lang, body, _ := strings.Cut(rest, "\n")
		text, after, _ := strings.Cut(body, "```")
		rest = after
		if lang == "json" || lang == "toml" {
			blocks = append(blocks, block{lang, text})
		}
	}
	if len(blocks) == 0 || len(blocks)%2 != 0 {
		t.Fatalf("docs/config.md has %d JSON and TOML blocks, want pairs of a file and its wrapped text", len(blocks))
	}
	for i := 0; i < len(blocks); i += 2 {
		before, after := blocks[i], blocks[i+1]
		path := map[string]string{"json": ".mcp.json", "toml": "config.toml"}[before.lang]
		f, err := Parse(path, []byte(before.text))
		if err != nil {
			t.Fatalf("docs/config.md's %s example: %v", before.lang, err)
		}
		got, err := f.Wrap(stdio(f), "/usr/local/bin/mcpstdio", "/var/log/mcpstdio")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(after.text, string(got)); diff != "" {
			t.Errorf("docs/config.md's %s example, wrapped, is not the text that follows it (-doc +wrap):\n%s", before.lang, diff)
		}
		w, err := Parse(path, got)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := w.Unwrap(stdio(w)); err != nil || string(back) != before.text {
			t.Errorf("docs/config.md's %s example: unwrap does not give it back (%v)", before.lang, err)
		}
	}
}
