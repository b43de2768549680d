package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// TestHostileReplay: what replay prints of a record made with a hostile
// server (its method names, errors and results, in every departure) and
// what -baseline prints of a hostile report (criterion names, the
// command) holds no raw control character and no forged line.
func TestHostileReplay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	rec := filepath.Join(dir, "proxied.ndjson")
	evilJSON, _ := json.Marshal(evil)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":` + string(evilJSON) + `}}`,
		`{"jsonrpc":"2.0","id":` + string(evilJSON) + `,"method":` + string(evilJSON) + `}`,
	}, "\n") + "\n"
	proxied := resultOf(cmdtest.Run(t, time.Minute, nil, strings.NewReader(in), binary, "proxy", "-dir", dir, "-log", rec, "--", buildHostileServer(t)))
	if proxied.code != 0 {
		t.Fatalf("the proxy in front of the hostile server: exit %d\n%s", proxied.code, proxied.stderr)
	}
	// Against the fake, every message the hostile server sent departs.
	res := mcpstdio(t, time.Minute, "replay", "-same", "-patience", "300ms", "-record", rec, "--", binary, "fake")
	if res.code != 1 || !strings.Contains(res.stdout, `\x1b]0;owned\x07`) {
		t.Errorf("replay of the hostile record against the fake: exit %d, want 1 and the departures shown escaped\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	// By the rules, the findings name the hostile methods and ids.
	rules := mcpstdio(t, time.Minute, "replay", "-patience", "300ms", "-record", rec, "--", binary, "fake")
	for name, out := range map[string]string{"stdout": res.stdout, "stderr": res.stderr, "stdout by the rules": rules.stdout, "stderr by the rules": rules.stderr} {
		if c := rawControl(out); c != "" {
			t.Errorf("replay: its %s holds a raw control character: %q", name, c)
		}
		if l := forged(out); l != "" {
			t.Errorf("replay: its %s holds a forged line %q", name, l)
		}
	}

	var buf bytes.Buffer
	p := &printer{w: &buf, ctx: t.Context()}
	base := &assertions.Report{Subject: "./server", Command: []string{"./server"}, Results: []assertions.Result{{Name: evil, Verdict: assertions.Pass}}}
	cur := &assertions.Report{Subject: evil, Command: []string{evil}, Results: []assertions.Result{{Name: evil, Verdict: assertions.Fail}}}
	p.changes(base, cur, compareReports(base, cur))
	if c := rawControl(buf.String()); c != "" {
		t.Errorf("-baseline: the comparison holds a raw control character: %q", c)
	}
	if l := forged(buf.String()); l != "" {
		t.Errorf("-baseline: the comparison holds a forged line %q", l)
	}
}
