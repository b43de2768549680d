//go:build linux

package integration_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestWrapAgents: `mcpstdio wrap` puts the proxy in front of the server in
// the config of a real agent CLI (Claude Code's ~/.claude.json, Codex's
// config.toml, opencode's opencode.jsonc, with other settings around); the CLI
// then connects to the server through the proxy (Claude Code's and
// opencode's `mcp list` say it connected, Codex's app server answers a
// tool call), and `mcpstdio
// status` shows the proxy while it does; `mcpstdio unwrap` gives back the
// original file, byte for byte (for Claude Code, which rewrites the whole
// file in its own format as it runs, the file as it wrote it before the
// wrap). The server waits for a file before it starts the fake, so that the
// test sees the live proxy first.
func TestWrapAgents(t *testing.T) {
	mcpstdio, _ := buildHostBinaries(t)
	for _, tc := range []struct {
		name, bin, file, text string
		run                   func(t *testing.T, bin, home string) *exec.Cmd
		connected             string
		rewrites              bool     // the CLI rewrites the file whole, in its own format
		env                   []string // more environment; {home} is HOME
	}{
		{
			name: "claude", bin: ".bin/claude", file: ".claude.json",
			text: `{
  "numStartups": 1,
  "installMethod": "npm",
  "autoUpdates": false,
  "mcpServers": {
    "fake": {
      "type": "stdio",
      "command": "sh",
      "args": {server_args},
      "env": {}
    },
    "docs": {
      "type": "http",
      "url": "http://127.0.0.1:9/mcp"
    }
  },
  "projects": {}
}
`,
			run: func(t *testing.T, bin, home string) *exec.Cmd {
				return exec.Command(bin, "mcp", "list")
			},
			connected: "fake: ",
			rewrites:  true,
		},
		{
			name: "codex", bin: ".bin/codex", file: filepath.Join(".codex", "config.toml"),
			text: `# Codex's settings; no model is called
model = "gpt-5"
approval_policy = "never"

[mcp_servers.fake]
command = "sh"
args = {server_args}
startup_timeout_sec = 120 # the server waits for the test

[mcp_servers.docs]
url = "http://127.0.0.1:9/mcp"
enabled = false
`,
			run: func(t *testing.T, bin, home string) *exec.Cmd {
				return exec.Command(buildCodexHost(t), "-codex", bin, "-home", filepath.Join(home, ".codex"), "-server", "fake", "-tool", "echo")
			},
			connected: `"text":"hi"`,
		},
		{
			name: "opencode", bin: "opencode-linux-x64/bin/opencode", file: "opencode.jsonc",
			text: `{
  "$schema": "https://opencode.ai/config.json",
  // opencode reads JSON with comments
  "autoupdate": false,
  "mcp": {
    "fake": {
      "type": "local",
      "command": {server_argv},
    },
  },
}
`,
			env: []string{"OPENCODE_CONFIG={home}/opencode.jsonc"},
			run: func(t *testing.T, bin, home string) *exec.Cmd {
				return exec.Command(bin, "mcp", "list")
			},
			connected: "✓ fake",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, err := filepath.Abs(filepath.Join("agents", tc.name, "node_modules", tc.bin))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(bin); err != nil {
				t.Skipf("needs `npm ci` in integration/agents/%s: %v", tc.name, err)
			}
			t.Parallel()
			root := t.TempDir()
			home, env := agentHome(t, root)
			state, start := filepath.Join(root, "state"), filepath.Join(root, "start")
			// The server: wait for the file start, then run the fake.
			script := `while [ ! -e "$1" ]; do sleep 0.05; done; shift; exec "$@"`
			args, _ := json.Marshal([]string{"-c", script, "sh", start, mcpstdio, "fake"})
			argv, _ := json.Marshal([]string{"sh", "-c", script, "sh", start, mcpstdio, "fake"})
			text := strings.NewReplacer("{server_args}", string(args), "{server_argv}", string(argv)).Replace(tc.text)
			for _, e := range tc.env {
				env = append(env, strings.ReplaceAll(e, "{home}", home))
			}
			path := filepath.Join(home, tc.file)
			os.MkdirAll(filepath.Dir(path), 0o700)
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
			defer cancel()
			if tc.rewrites {
				// Claude Code writes ~/.claude.json whole (JSON.stringify,
				// two spaces) at its first start, with state of its own:
				// the file a user has is that one. Run it once, on the
				// server alone.
				os.WriteFile(start, nil, 0o600)
				cmd := tc.run(t, bin, home)
				cmd.Env, cmd.Dir = env, home
				if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), tc.connected) {
					t.Fatalf("%s without the proxy: %v\n%s", tc.name, err, out)
				}
				os.Remove(start)
				b, err := os.ReadFile(path)
				if err != nil || string(b) == text {
					t.Fatalf("%s did not rewrite %s: %v", tc.name, path, err)
				}
				text = string(b)
			}
			if out, err := exec.Command(mcpstdio, "wrap", "-dir", state, path).CombinedOutput(); err != nil {
				t.Fatalf("mcpstdio wrap: %v\n%s", err, out)
			}
			cmd := tc.run(t, bin, home)
			cmd.Env, cmd.Dir = env, home
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			stop := func() {
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
			}
			// The proxy is up, runs the server, and has the host's first
			// request, which the server will read once the fake runs.
			server := []string{"sh", "-c", script, "sh", start, mcpstdio, "fake"}
			var st []byte
			poll.Wait(t, 2*time.Minute, "mcpstdio status listing the proxy with the host's first request", func() bool {
				st, _ = exec.CommandContext(ctx, mcpstdio, "status", "-json", "-dir", state).Output()
				var proxies []struct {
					Argv    []string
					Pending []struct{ Dir, Method string }
				}
				json.Unmarshal(st, &proxies)
				for _, p := range proxies {
					if slices.Equal(p.Argv, server) && len(p.Pending) > 0 && p.Pending[0].Dir == record.DirIn {
						return true
					}
				}
				return false
			}, func() string { return string(st) + "\n" + out.String() })
			if err := os.WriteFile(start, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil || !strings.Contains(out.String(), tc.connected) {
					t.Errorf("%s through the proxy: %v, want %q in its output:\n%s", tc.name, err, tc.connected, out.String())
				}
			case <-ctx.Done():
				stop()
				t.Fatalf("%s did not end within 5 minutes:\n%s", tc.name, out.String())
			}
			if tc.name == "claude" && !strings.Contains(out.String(), "✔ Connected") {
				t.Errorf("claude mcp list does not say the server connected:\n%s", out.String())
			}
			recs, _ := filepath.Glob(filepath.Join(state, "*.ndjson"))
			if len(recs) == 0 {
				t.Errorf("no record in %s", state)
			}
			if left := leftovers(root, 15*time.Second); len(left) > 0 {
				t.Errorf("processes left running (killed now): %s", strings.Join(left, "; "))
			}

			if out, err := exec.Command(mcpstdio, "unwrap", path).CombinedOutput(); err != nil {
				t.Fatalf("mcpstdio unwrap: %v\n%s", err, out)
			}
			if b, _ := os.ReadFile(path); string(b) != text {
				t.Errorf("after unwrap %s is not the original:\n%s\nwant:\n%s", tc.file, b, text)
			}
		})
	}
}

// agentHome makes a HOME, XDG directories and TMPDIR under root, as
// agentProbe does, and returns HOME and the environment naming them.
func agentHome(t *testing.T, root string) (string, []string) {
	t.Helper()
	home := filepath.Join(root, "home")
	env := os.Environ()
	for _, kv := range [][2]string{{"HOME", ""}, {"XDG_CONFIG_HOME", ".config"}, {"XDG_DATA_HOME", ".local/share"},
		{"XDG_CACHE_HOME", ".cache"}, {"XDG_STATE_HOME", ".local/state"}, {"TMPDIR", "tmp"}} {
		p := filepath.Join(home, kv[1])
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		env = append(env, kv[0]+"="+p)
	}
	return home, env
}
