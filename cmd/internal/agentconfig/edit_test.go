package agentconfig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pelletier/go-toml/v2"
	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

const (
	exe      = "/usr/local/bin/mcpstdio"
	stateDir = "/state"
)

// formatCase is a config file of one format, the servers in it (name:
// argv, or "url" for a remote one) and the file Wrap makes of it.
type formatCase struct {
	name, path string
	format     Format
	text, want string
	servers    map[string][]string
}

var formatCases = []formatCase{
	{
		name: "Claude Code project", path: ".mcp.json", format: MCPServers,
		text: `{
  "mcpServers": {
    "files": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv"],
      "env": {"DEBUG": "1"}
    },
    "bare": {"command": "/opt/bin/server"},
    "empty": {"type": "stdio", "command": "node", "args": [ ]},
    "multi": {
      "command": "python3",
      "args": [
        "-m",
        "server"
      ]
    },
    "remote": {"type": "http", "url": "https://example.com/mcp"}
  },
  "other": [1, 2]
}
`,
		want: `{
  "mcpServers": {
    "files": {
      "command": "/usr/local/bin/mcpstdio",
      "args": ["proxy", "-dir", "/state", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv"],
      "env": {"DEBUG": "1"}
    },
    "bare": {"command": "/usr/local/bin/mcpstdio", "args": ["proxy", "-dir=/state", "--", "/opt/bin/server"]},
    "empty": {"type": "stdio", "command": "/usr/local/bin/mcpstdio", "args": ["proxy", "-dir", "/state", "--", "node" ]},
    "multi": {
      "command": "/usr/local/bin/mcpstdio",
      "args": [
        "proxy",
        "-dir",
        "/state",
        "--",
        "python3",
        "-m",
        "server"
      ]
    },
    "remote": {"type": "http", "url": "https://example.com/mcp"}
  },
  "other": [1, 2]
}
`,
		servers: map[string][]string{"files": {"npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv"}, "bare": {"/opt/bin/server"},
			"empty": {"node"}, "multi": {"python3", "-m", "server"}, "remote": {"url"}},
	},
	{
		name: "Claude Code user config with projects", path: ".claude.json", format: MCPServers,
		text: `{"numStartups":3,"mcpServers":{"u":{"type":"stdio","command":"uvx","args":["srv"],"env":{}}},` +
			`"projects":{"/p":{"allowedTools":[],"mcpServers":{"p":{"type":"stdio","command":"node","args":["s.js"]}}}}}`,
		want: `{"numStartups":3,"mcpServers":{"u":{"type":"stdio","command":"/usr/local/bin/mcpstdio","args":["proxy", "-dir", "/state", "--", "uvx", "srv"],"env":{}}},` +
			`"projects":{"/p":{"allowedTools":[],"mcpServers":{"p":{"type":"stdio","command":"/usr/local/bin/mcpstdio","args":["proxy", "-dir", "/state", "--", "node", "s.js"]}}}}}`,
		servers: map[string][]string{"u": {"uvx", "srv"}, "p": {"node", "s.js"}},
	},
	{
		name: "Gemini CLI settings with comments", path: "settings.json", format: MCPServers,
		text:    "{\n  // servers\n  \"mcpServers\": {\n    \"g\": {\"command\": \"go\", /* run it */ \"args\": [\"run\", \"./srv\"], \"cwd\": \"sub\"}\n  }\n}\n",
		want:    "{\n  // servers\n  \"mcpServers\": {\n    \"g\": {\"command\": \"/usr/local/bin/mcpstdio\", /* run it */ \"args\": [\"proxy\", \"-dir\", \"/state\", \"--\", \"go\", \"run\", \"./srv\"], \"cwd\": \"sub\"}\n  }\n}\n",
		servers: map[string][]string{"g": {"go", "run", "./srv"}},
	},
	{
		name: "VS Code", path: filepath.Join(".vscode", "mcp.json"), format: VSCode,
		text: `{
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		// the one we write
		"mine": {
			"type": "stdio",
			"command": "${workspaceFolder}/bin/server", // built by make
			"env": {"TOKEN": "${input:token}",},
		},
		"web": {"type": "http", "url": "http://localhost:3000/mcp"},
	},
}
`,
		want: `{
	"inputs": [{"type": "promptString", "id": "token", "password": true}],
	"servers": {
		// the one we write
		"mine": {
			"type": "stdio",
			"command": "/usr/local/bin/mcpstdio", "args": ["proxy", "-dir=/state", "--", "${workspaceFolder}/bin/server"], // built by make
			"env": {"TOKEN": "${input:token}",},
		},
		"web": {"type": "http", "url": "http://localhost:3000/mcp"},
	},
}
`,
		servers: map[string][]string{"mine": {"${workspaceFolder}/bin/server"}, "web": {"url"}},
	},
	{
		name: "VS Code user settings", path: "settings.json", format: VSCode,
		text:    "{\n\t\"editor.fontSize\": 14,\n\t\"mcp\": {\"servers\": {\"s\": {\"command\": \"srv\", \"args\": [\"-v\"],},},},\n}\n",
		want:    "{\n\t\"editor.fontSize\": 14,\n\t\"mcp\": {\"servers\": {\"s\": {\"command\": \"/usr/local/bin/mcpstdio\", \"args\": [\"proxy\", \"-dir\", \"/state\", \"--\", \"srv\", \"-v\"],},},},\n}\n",
		servers: map[string][]string{"s": {"srv", "-v"}},
	},
	{
		name: "opencode", path: "opencode.jsonc", format: OpenCode,
		text: `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "local": {
      "type": "local",
      // the program and its arguments, in one array
      "command": ["bun", "x", "my-mcp-command"],
      "enabled": true,
      "environment": {"MY_ENV_VAR": "{env:HOME}"},
    },
    "lines": {"type": "local", "command": [
      "node",
      "server.js",
    ]},
    "remote": {"type": "remote", "url": "https://example.com/mcp"}
  }
}
`,
		want: `{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    "local": {
      "type": "local",
      // the program and its arguments, in one array
      "command": ["/usr/local/bin/mcpstdio", "proxy", "-dir", "/state", "--", "bun", "x", "my-mcp-command"],
      "enabled": true,
      "environment": {"MY_ENV_VAR": "{env:HOME}"},
    },
    "lines": {"type": "local", "command": [
      "/usr/local/bin/mcpstdio",
      "proxy",
      "-dir",
      "/state",
      "--",
      "node",
      "server.js",
    ]},
    "remote": {"type": "remote", "url": "https://example.com/mcp"}
  }
}
`,
		servers: map[string][]string{"local": {"bun", "x", "my-mcp-command"}, "lines": {"node", "server.js"}, "remote": {"url"}},
	},
	{
		name: "Codex", path: "config.toml", format: Codex,
		text: `model = "o3" # the default

[mcp_servers.docs]
command = "npx" # from npm
args = ["-y", "mcp-server"]
env = { "API_KEY" = "value" }

[mcp_servers.bare]
  command = 'C:\tools\server.exe'
  startup_timeout_sec = 20

[mcp_servers.inline]
[mcp_servers]
short = { command = "srv", enabled = false }
long = { command = "uv", args = [ # comment
  "run",
  "server.py",
] }

[mcp_servers.remote]
url = "https://example.com/mcp"

[profiles.x]
model = "gpt"
`,
		want: `model = "o3" # the default

[mcp_servers.docs]
command = "/usr/local/bin/mcpstdio" # from npm
args = ["proxy", "-dir", "/state", "--", "npx", "-y", "mcp-server"]
env = { "API_KEY" = "value" }

[mcp_servers.bare]
  command = "/usr/local/bin/mcpstdio"
  args = ["proxy", "-dir=/state", "--", 'C:\tools\server.exe']
  startup_timeout_sec = 20

[mcp_servers.inline]
[mcp_servers]
short = { command = "/usr/local/bin/mcpstdio", args = ["proxy", "-dir=/state", "--", "srv"], enabled = false }
long = { command = "/usr/local/bin/mcpstdio", args = [ # comment
  "proxy",
  "-dir",
  "/state",
  "--",
  "uv",
  "run",
  "server.py",
] }

[mcp_servers.remote]
url = "https://example.com/mcp"

[profiles.x]
model = "gpt"
`,
		servers: map[string][]string{"docs": {"npx", "-y", "mcp-server"}, "bare": {`C:\tools\server.exe`}, "short": {"srv"},
			"long": {"uv", "run", "server.py"}, "remote": {"url"}, "inline": {"bad: no command and no url"}},
	},
	{
		name: "Codex dotted keys, no newline at the end", path: "config.toml", format: Codex,
		text:    "mcp_servers.d.command = \"srv\"",
		want:    "mcp_servers.d.command = \"/usr/local/bin/mcpstdio\"\nmcp_servers.d.args = [\"proxy\", \"-dir=/state\", \"--\", \"srv\"]",
		servers: map[string][]string{"d": {"srv"}},
	},
}

// argvs returns each server's command line ("url" for a remote one).
func argvs(f *File) map[string][]string {
	m := map[string][]string{}
	for _, s := range f.Servers {
		if s.Bad != "" {
			m[s.Name] = []string{"bad: " + s.Bad}
			continue
		}
		if s.URL != "" {
			m[s.Name] = []string{"url"}
			continue
		}
		m[s.Name] = append([]string{s.Command}, s.Args...)
	}
	return m
}

// stdio returns the stdio servers of f.
func stdio(f *File) []*Server {
	var out []*Server
	for _, s := range f.Servers {
		if s.Stdio() {
			out = append(out, s)
		}
	}
	return out
}

// TestWrapUnwrap wraps every stdio server of each format, checks the text
// against the one expected (only the entries' command and args changed),
// that its host's syntax reads it and that it names the same servers, now
// behind the proxy, then unwraps them and checks that the text is the
// original, byte for byte.
func TestWrapUnwrap(t *testing.T) {
	for _, tc := range formatCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.path, []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != tc.format {
				t.Errorf("Format = %v, want %v", f.Format, tc.format)
			}
			if diff := cmp.Diff(tc.servers, argvs(f)); diff != "" {
				t.Errorf("servers mismatch (-want +got):\n%s", diff)
			}
			wrapped, err := f.Wrap(stdio(f), exe, stateDir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(wrapped)); diff != "" {
				t.Errorf("Wrap mismatch (-want +got):\n%s", diff)
			}
			wf, err := Parse(tc.path, wrapped)
			if err != nil {
				t.Fatalf("the wrapped file does not parse: %v", err)
			}
			if diff := cmp.Diff(tc.servers, argvs(wf)); diff != "" {
				t.Errorf("servers of the wrapped file mismatch (-want +got):\n%s", diff)
			}
			for _, s := range wf.Servers {
				if s.Stdio() && (len(s.Proxy) < 3 || s.Proxy[0] != exe || s.Proxy[1] != "proxy") {
					t.Errorf("%s: Proxy = %q, want %s proxy -dir %s", s.Name, s.Proxy, exe, stateDir)
				}
			}
			if _, err := wf.Wrap(stdio(wf)[:1], exe, stateDir); err == nil || !strings.Contains(err.Error(), "already runs the proxy") {
				t.Errorf("Wrap of a wrapped server: %v, want an error saying it already runs the proxy", err)
			}
			back, err := wf.Unwrap(stdio(wf))
			if err != nil {
				t.Fatal(err)
			}
			if string(back) != tc.text {
				t.Errorf("Unwrap(Wrap(text)) is not the text:\n%s", cmp.Diff(tc.text, string(back)))
			}
		})
	}
}

// TestUnwrapRewritten unwraps files that another program rewrote after
// Wrap (Claude Code rewrites ~/.claude.json whole, JSON.stringify with two
// spaces): the servers come back as they were, in that program's format.
func TestUnwrapRewritten(t *testing.T) {
	for _, tc := range formatCases {
		if tc.format == Codex {
			continue
		}
		f, err := Parse(tc.path, []byte(tc.want))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal([]byte(stripComments(t, tc.want)), &v); err != nil {
			continue // JSONC with trailing commas: no such rewriter
		}
		rewritten, _ := json.MarshalIndent(v, "", "  ")
		if f, err = Parse(tc.path, rewritten); err != nil {
			t.Fatal(err)
		}
		back, err := f.Unwrap(stdio(f))
		if err != nil {
			t.Fatal(err)
		}
		bf, err := Parse(tc.path, back)
		if err != nil {
			t.Fatalf("%s: the unwrapped file does not parse: %v\n%s", tc.name, err, back)
		}
		if diff := cmp.Diff(tc.servers, argvs(bf)); diff != "" {
			t.Errorf("%s: servers after Unwrap mismatch (-want +got):\n%s", tc.name, diff)
		}
		for _, s := range bf.Servers {
			if s.Wrapped() {
				t.Errorf("%s: %s still wrapped", tc.name, s.Name)
			}
		}
		var orig, got any
		json.Unmarshal([]byte(stripComments(t, tc.text)), &orig)
		json.Unmarshal(back, &got)
		if diff := cmp.Diff(orig, got); diff != "" {
			t.Errorf("%s: the rewritten file, unwrapped, is not the original's JSON (-want +got):\n%s", tc.name, diff)
		}
	}
}

// stripComments removes the comments of a test's JSON (none of them has
// "//" or "/*" in a string but the $schema URL).
func stripComments(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if i := strings.Index(line, "// "); i >= 0 {
			line = line[:i]
		}
		if i := strings.Index(line, "/*"); i >= 0 {
			line = line[:i] + line[strings.Index(line, "*/")+2:]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestWrapNamed wraps one server: the others' bytes stay as they were.
func TestWrapNamed(t *testing.T) {
	tc := formatCases[0]
	f, err := Parse(tc.path, []byte(tc.text))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := f.Select([]string{"bare"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.Wrap(sel, exe, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(tc.text, `"bare": {"command": "/opt/bin/server"}`,
		`"bare": {"command": "/usr/local/bin/mcpstdio", "args": ["proxy", "-dir=/state", "--", "/opt/bin/server"]}`, 1)
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("Wrap(bare) mismatch (-want +got):\n%s", diff)
	}
	if _, err := f.Select([]string{"bare", "nope"}); err == nil || !strings.Contains(err.Error(), `no server named "nope"`) {
		t.Errorf("Select(nope) = %v, want an error naming it", err)
	}
	remote, _ := f.Select([]string{"remote"})
	if _, err := f.Wrap(remote, exe, stateDir); err == nil || !strings.Contains(err.Error(), "not a stdio server") {
		t.Errorf("Wrap(remote) = %v, want an error", err)
	}
	if _, err := f.Unwrap(sel); err == nil || !strings.Contains(err.Error(), "does not run the proxy") {
		t.Errorf("Unwrap of a server not wrapped = %v, want an error", err)
	}
}

// TestHandWrapped reads entries that run the proxy written by hand, or
// mcpstdio-proxy, and unwraps them.
func TestHandWrapped(t *testing.T) {
	text := `{"mcpServers": {
  "a": {"command": "mcpstdio", "args": ["proxy", "-log", "a.ndjson", "--", "srv", "-v"]},
  "b": {"command": "C:\\bin\\mcpstdio-proxy.exe", "args": ["--", "srv2"]},
  "c": {"command": "mcpstdio", "args": ["proxy", "-v"]}
}}`
	f, err := Parse("mcp.json", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"srv", "-v"}, "b": {"srv2"}, "c": {"mcpstdio", "proxy", "-v"}}
	if diff := cmp.Diff(want, argvs(f)); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	if f.Servers[2].Wrapped() {
		t.Errorf("c (no --) is wrapped: %q", f.Servers[2].Proxy)
	}
	got, err := f.Unwrap(f.Servers[:2])
	if err != nil {
		t.Fatal(err)
	}
	wantText := `{"mcpServers": {
  "a": {"command": "srv", "args": ["-v"]},
  "b": {"command": "srv2", "args": []},
  "c": {"command": "mcpstdio", "args": ["proxy", "-v"]}
}}`
	if diff := cmp.Diff(wantText, string(got)); diff != "" {
		t.Errorf("Unwrap mismatch (-want +got):\n%s", diff)
	}
}

// TestRefuse checks the files that are refused, with where and why, and
// the entries that cannot be used while the rest of the file is read.
func TestRefuse(t *testing.T) {
	for _, tc := range []struct{ path, text, want string }{
		{".mcp.json", "{\"mcpServers\": {} // none\n}", "line 1, column 19: a comment, which this file's host does not accept"},
		{"claude_desktop_config.json", `{"mcpServers": {"a": {"command": "x",}}}`, "a trailing comma before }"},
		{"settings.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\", \"args\": [\"y\",]}}}", "a trailing comma before ]"},
		{"mcp.json", `{"mcpServers": {"a": {"command": "x"}}`, "unexpected end of file"},
		{"mcp.json", `{"mcpServers": {"a": {"command": "x"}}} {}`, "after the JSON value"},
		{"mcp.json", `{"mcpServers": {"a": {"command": "x\q"}}}`, "not a JSON string"},
		{"mcp.json", `{"mcpServers": {"a": {"command": "x", "n": 01}}}`, "want a value"},
		{"mcp.json", `[]`, "names no MCP servers"},
		{"mcp.json", `{"other": {}}`, "names no MCP servers"},
		{"mcp.json", `{"mcpServers": []}`, `"mcpServers" is not an object`},
		{"mcp.json", `{"mcpServers": {"a": /* x`, "a comment that is never closed"},
		{".vscode/mcp.json", `{"servers": {"a": {"command": "x"}} /* x`, "never closed"},
		{"mcp.json", strings.Repeat("[", 2000), "nested more than 1000 deep"},
		{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n", "line 3"},
		{"config.toml", "[mcp_servers.a\n", "line 1"},
		{"config.toml", "mcp_servers = 1\n", "not a table of servers"},
	} {
		_, err := Parse(tc.path, []byte(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("Parse(%s, %q) = %v, want an error naming the file and saying %q", tc.path, tc.text, err, tc.want)
		}
	}
	// Entries that cannot be used are read, marked Bad.
	f, err := Parse("mcp.json", []byte(`{"mcpServers": {"a": {"command": 1}, "b": {"command": "x", "args": "y"}, "c": {"command": "x"}, "d": {}, "c": {"command": "z"}, "e": []}}`))
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for _, s := range f.Servers {
		bad = append(bad, s.Name+": "+s.Bad)
	}
	want := []string{"a: command is not a string", "b: args is not an array of strings",
		"c: named again later in the file: the host reads the later entry", "d: no command and no url", "c: ", "e: the entry is not a JSON object"}
	if diff := cmp.Diff(want, bad); diff != "" {
		t.Errorf("Bad mismatch (-want +got):\n%s", diff)
	}
	if _, err := f.Wrap(f.Servers[:1], exe, stateDir); err == nil || !strings.Contains(err.Error(), "command is not a string") {
		t.Errorf("Wrap of a bad entry = %v", err)
	}
}

// TestCodexEntries checks what Codex's entries say beyond the command.
func TestCodexEntries(t *testing.T) {
	tc := formatCases[slices.IndexFunc(formatCases, func(c formatCase) bool { return c.name == "Codex" })]
	f, err := Parse("config.toml", []byte(tc.text))
	if err != nil {
		t.Fatal(err)
	}
	if err := toml.Unmarshal([]byte(tc.want), new(map[string]any)); err != nil {
		t.Errorf("the wrapped Codex config is not TOML: %v", err)
	}
	got := map[string]string{}
	for _, s := range f.Servers {
		got[s.Name] = strings.Join([]string{s.URL, map[bool]string{true: "disabled"}[s.Disabled], strings.Join(sortedEnv(s.Env), ",")}, "|")
	}
	want := map[string]string{"docs": "||API_KEY=value", "bare": "||", "short": "|disabled|", "long": "||", "remote": "https://example.com/mcp||", "inline": "||"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries mismatch (-want +got):\n%s", diff)
	}
}

func sortedEnv(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// TestReadFile reads a file from disk, and says so when it is missing.
func TestReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".mcp.json")
	if _, err := ReadFile(path); !os.IsNotExist(err) {
		t.Errorf("ReadFile of a missing file = %v, want not exist", err)
	}
	os.WriteFile(path, []byte(formatCases[0].text), 0o600)
	f, err := ReadFile(path)
	if err != nil || len(f.Servers) != 5 || string(f.Text()) != formatCases[0].text {
		t.Errorf("ReadFile = %v, %v", f, err)
	}
}
