//go:build linux

package integration_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestCodexDocs runs what the docs tell a Codex user against the pinned
// Codex (agents/codex, `npm ci`): docs/proxy.md's config.toml, its paths
// replaced by this test's, puts `mcpstdio proxy` in front of `mcpstdio
// fake`, and docs/hosts.md's app-server lines, sent one at a time with the
// thread's id filled in, list the server's tools and call its echo tool
// through the proxy, with no model, login or key.
func TestCodexDocs(t *testing.T) {
	codex, err := filepath.Abs(filepath.Join("agents", "codex", "node_modules", ".bin", "codex"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(codex); err != nil {
		t.Skipf("Codex needs `npm ci` in integration/agents/codex: %v", err)
	}
	t.Parallel()
	mcpstdio, _ := buildHostBinaries(t)
	config := markdownBlock(t, "../docs/proxy.md", "toml", "[mcp_servers.")
	lines := markdownBlock(t, "../docs/hosts.md", "json", `"mcpServer/tool/call"`)
	state := t.TempDir() // the proxy's status and record: not the user's state directory
	for _, r := range [][2]string{
		{`"/path/to/go/bin/mcpstdio"`, strconv.Quote(mcpstdio)},
		{`["proxy", "--", "node", "/path/to/server.js", "--stdio"]`, fmt.Sprintf(`["proxy", "-dir", %q, "--", %q, "fake"]`, state, mcpstdio)},
	} {
		if !strings.Contains(config, r[0]) {
			t.Fatalf("docs/proxy.md's config.toml has no %s to replace:\n%s", r[0], config)
		}
		config = strings.ReplaceAll(config, r[0], r[1])
	}
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(codex, "app-server")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+home, "HOME="+t.TempDir())
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	msgs := make(chan map[string]json.RawMessage)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	defer func() {
		stdin.Close()
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		for range msgs {
		}
		_ = cmd.Wait()
	}()
	deadline := time.NewTimer(2 * time.Minute)
	defer deadline.Stop()
	answers := map[string]json.RawMessage{} // result by method
	thread := ""
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		line = strings.ReplaceAll(line, "THREAD_ID", thread)
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatalf("docs/hosts.md: %q is not a JSON-RPC message: %v", line, err)
		}
		if _, err := fmt.Fprintln(stdin, line); err != nil {
			t.Fatalf("writing %s to codex app-server: %v", req.Method, err)
		}
		for req.ID != nil { // a request: wait for its answer
			var m map[string]json.RawMessage
			select {
			case m = <-msgs:
			case <-deadline.C:
				t.Fatalf("codex app-server: no answer to %s within 2m", req.Method)
			}
			if m == nil {
				t.Fatalf("codex app-server closed its stdout before answering %s", req.Method)
			}
			if m["method"] != nil && m["id"] != nil { // its own request: refused
				fmt.Fprintf(stdin, `{"id":%s,"error":{"code":-32601,"message":"not supported"}}`+"\n", m["id"])
				continue
			}
			if m["method"] != nil || string(m["id"]) != string(req.ID) {
				continue
			}
			if m["error"] != nil {
				t.Fatalf("%s: error %s", req.Method, m["error"])
			}
			answers[req.Method] = m["result"]
			break
		}
		if req.Method == "thread/start" {
			var r struct{ Thread struct{ ID string } }
			if json.Unmarshal(answers[req.Method], &r) != nil || r.Thread.ID == "" {
				t.Fatalf("thread/start: no thread id in %s", answers[req.Method])
			}
			thread = r.Thread.ID
		}
	}
	if got := string(answers["mcpServer/tool/call"]); !strings.Contains(got, `"text":"hi"`) {
		t.Errorf("mcpServer/tool/call: %s, want the echo of \"hi\"", got)
	}
	if got := string(answers["mcpServerStatus/list"]); !strings.Contains(got, `"echo"`) {
		t.Errorf("mcpServerStatus/list: %.300s, want the fake's echo tool in it", got)
	}
	if recs, _ := filepath.Glob(filepath.Join(state, "*.ndjson")); len(recs) == 0 {
		t.Errorf("no record in the proxy's state directory: the call did not go through the proxy")
	}
}

// markdownBlock returns the first ```lang block of the Markdown file path
// that contains marker.
func markdownBlock(t *testing.T, path, lang, marker string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(b), "```"+lang+"\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		if ok && strings.Contains(block, marker) {
			return block
		}
	}
	t.Fatalf("%s has no ```%s block with %s", path, lang, marker)
	return ""
}
