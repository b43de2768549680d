package agentconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLaunch checks how each format's entries are started: variables,
// env files, working directories.
func TestLaunch(t *testing.T) {
	proj := t.TempDir()
	env := map[string]string{"TOKEN": "t0k", "HOME_BIN": "/opt/bin"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if err := os.WriteFile(filepath.Join(proj, "secret.txt"), []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte("# comment\nexport A=1\nB=\"two words\"\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, text string
		want             map[string]Launch
		errs             map[string]string
	}{
		{
			name: "Claude Code project file", path: ".mcp.json",
			text: `{"mcpServers": {
				"a": {"command": "${HOME_BIN}/srv", "args": ["--token", "${TOKEN}", "${LEVEL:-info}"], "env": {"K": "${TOKEN}", "J": "x"}},
				"b": {"command": "srv", "args": ["${NOPE}"]}}}`,
			want: map[string]Launch{"a": {Argv: []string{"/opt/bin/srv", "--token", "t0k", "info"}, Env: []string{"J=x", "K=t0k"}, Dir: proj}},
			errs: map[string]string{"b": "${NOPE} is not set in this environment"},
		},
		{
			name: "Claude Code's projects", path: ".claude.json",
			text: `{"projects": {"/work/p": {"mcpServers": {"p": {"command": "node", "args": ["s.js"]}}}}}`,
			want: map[string]Launch{"p": {Argv: []string{"node", "s.js"}, Dir: "/work/p"}},
		},
		{
			name: "VS Code", path: filepath.Join(".vscode", "mcp.json"),
			text: `{"servers": {
				"a": {"command": "${workspaceFolder}${/}bin/srv", "args": ["${env:TOKEN}", "${env:NONE}", "${userHome}"], "envFile": "${workspaceFolder}/.env", "env": {"B": "b"}},
				"b": {"command": "srv", "env": {"T": "${input:token}"}},
				"c": {"type": "sse", "url": "http://x"}}}`,
			want: map[string]Launch{"a": {Argv: []string{proj + "/bin/srv", "t0k", "", home()}, Env: []string{"A=1", "B=two words", "B=b"}, Dir: proj}},
			errs: map[string]string{"b": "${input:token} is filled in by the host", "c": "not a stdio server (url http://x)"},
		},
		{
			name: "Gemini CLI", path: filepath.Join(".gemini", "settings.json"),
			text: `{"mcpServers": {"g": {"command": "go", "args": ["run", "$TOKEN"], "cwd": "sub", "env": {"K": "$TOKEN-${TOKEN}"}}}}`,
			want: map[string]Launch{"g": {Argv: []string{"go", "run", "$TOKEN"}, Env: []string{"K=t0k-t0k"}, Dir: filepath.Join(proj, "sub")}},
		},
		{
			name: "opencode", path: "opencode.json",
			text: `{"mcp": {"o": {"type": "local", "command": ["srv", "{env:TOKEN}", "${TOKEN}"], "environment": {"S": "{file:secret.txt}"}},
				"x": {"type": "local", "command": ["srv"], "environment": {"S": "{file:missing.txt}"}}}}`,
			want: map[string]Launch{"o": {Argv: []string{"srv", "t0k", "${TOKEN}"}, Env: []string{"S=s3cret"}, Dir: proj}},
			errs: map[string]string{"x": "{file:missing.txt}: open"},
		},
		{
			name: "Codex", path: filepath.Join(".codex", "config.toml"),
			text: "[mcp_servers.c]\ncommand = \"srv\"\nargs = [\"${TOKEN}\"]\ncwd = \"/abs\"\nenv = { K = \"$TOKEN\" }\n",
			want: map[string]Launch{"c": {Argv: []string{"srv", "${TOKEN}"}, Env: []string{"K=$TOKEN"}, Dir: "/abs"}},
		},
		{
			name: "Claude Desktop", path: "claude_desktop_config.json",
			text: `{"mcpServers": {"d": {"command": "srv"}}}`,
			want: map[string]Launch{"d": {Argv: []string{"srv"}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(proj, tc.path)
			f, err := Parse(path, []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			f.vars.lookup = lookup
			got, errs := map[string]Launch{}, map[string]string{}
			for _, s := range f.Servers {
				l, err := f.Launch(s)
				if err != nil {
					errs[s.Name] = err.Error()
					continue
				}
				got[s.Name] = l
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Launch mismatch (-want +got):\n%s", diff)
			}
			if len(errs) != len(tc.errs) {
				t.Errorf("errors %q, want %q", errs, tc.errs)
			}
			for name, want := range tc.errs {
				if !strings.HasPrefix(errs[name], want) {
					t.Errorf("Launch(%s): error %q, want it to begin %q", name, errs[name], want)
				}
			}
		})
	}
}

func home() string {
	h, _ := os.UserHomeDir()
	return h
}

// TestUserFile checks that the servers of a user's file (in the home
// directory) run where the host was started.
func TestUserFile(t *testing.T) {
	f, err := Parse(filepath.Join(home(), ".claude.json"), []byte(`{"mcpServers": {"u": {"command": "srv"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := f.Launch(f.Servers[0]); err != nil || l.Dir != "" {
		t.Errorf("Launch = %+v, %v; want no working directory", l, err)
	}
}
