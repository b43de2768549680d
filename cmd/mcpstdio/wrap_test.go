package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/agentconfig"
	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// wrapFiles are a config file of each format, with comments where their
// host allows them, each naming the fake server: {fake} is its command
// (the command under test) and {dir} a directory to run it in.
var wrapFiles = []struct{ path, text string }{
	{".mcp.json", `{
  "mcpServers": {
    "fake": {"type": "stdio", "command": {fake}, "args": ["fake"], "env": {"LEVEL": "debug"}},
    "remote": {"type": "http", "url": "https://example.com/mcp"}
  }
}
`},
	{filepath.Join(".gemini", "settings.json"), `{
  "theme": "dark", // comments are fine here
  "mcpServers": {"fake": {"command": {fake}, "args": ["fake"], "cwd": {dir}}}
}
`},
	{filepath.Join(".vscode", "mcp.json"), `{
	// VS Code reads JSON with comments and trailing commas
	"servers": {
		"fake": {"type": "stdio", "command": {fake}, "args": ["fake",],},
	},
}
`},
	{"opencode.json", `{"$schema": "https://opencode.ai/config.json", "mcp": {"fake": {"type": "local", "command": [{fake}, "fake"]}}}
`},
	{"config.toml", `# Codex
model = "o3"

[mcp_servers.fake]
command = {fake}
args = ["fake"]   # the fake server
`},
}

// writeWrapFile writes a file of wrapFiles under a new directory, with
// mode 0640, and returns its path and its content.
func writeWrapFile(t *testing.T, path, text string) (string, string) {
	t.Helper()
	root := t.TempDir()
	full := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	text = strings.NewReplacer("{fake}", q(binary), "{dir}", q(root)).Replace(text)
	if err := os.WriteFile(full, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
	return full, text
}

// TestWrapUnwrap runs wrap and unwrap on a file of each format: wrap
// makes the entry run this command's proxy, in front of the same server,
// with the state directory given, keeps a backup and the file's mode;
// the wrapped entry works (probe through it, then status -all finds its
// record); unwrap gives back the original, byte for byte.
func TestWrapUnwrap(t *testing.T) {
	t.Parallel()
	for _, wf := range wrapFiles {
		t.Run(filepath.Base(wf.path), func(t *testing.T) {
			t.Parallel()
			path, orig := writeWrapFile(t, wf.path, wf.text)
			stateDir := t.TempDir()
			r := mcpstdio(t, time.Minute, "wrap", "-dir", stateDir, path)
			if r.code != 0 || !strings.Contains(r.stdout, "wrapped fake: "+binary+" proxy -dir "+stateDir+" -- "+binary+" fake") {
				t.Fatalf("wrap: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if b, err := os.ReadFile(path + ".mcpstdio-backup"); err != nil || string(b) != orig {
				t.Errorf("backup: %q, %v; want the original", b, err)
			}
			for _, p := range []string{path, path + ".mcpstdio-backup"} {
				if fi, err := os.Stat(p); err != nil || (runtime.GOOS != "windows" && fi.Mode().Perm() != 0o640) {
					t.Errorf("%s: %v, %v; want mode 0640 as the original's", p, fi.Mode(), err)
				}
			}
			f, err := agentconfig.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			sel, _ := f.Select([]string{"fake"})
			s := sel[0]
			want := []string{binary, "proxy", "-dir", stateDir}
			if strings.Join(s.Proxy, " ") != strings.Join(want, " ") || s.Command != binary || strings.Join(s.Args, " ") != "fake" {
				t.Errorf("wrapped entry: proxy %q, server %q %q; want %q, %s fake", s.Proxy, s.Command, s.Args, want, binary)
			}
			// The entry as its host runs it: the proxy, then the fake.
			argv := append(append(append([]string{}, s.Proxy...), "--", s.Command), s.Args...)
			if r := mcpstdio(t, time.Minute, append([]string{"probe", "-run", "^stdout-clean$", "--"}, argv...)...); r.code != 0 {
				t.Errorf("probe through the wrapped entry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := mcpstdio(t, time.Minute, "show", "-json", newestRecord(t, stateDir)); !strings.Contains(r.stdout, "tools/list") {
				t.Errorf("show of the wrapped entry's record: exit %d, no tools/list in it\n%s%s", r.code, r.stdout, r.stderr)
			}
			if r := mcpstdio(t, time.Minute, "wrap", "-dir", stateDir, path, "fake"); r.code != 2 || !strings.Contains(r.stderr, "already runs the proxy") {
				t.Errorf("wrap again: exit %d, stderr %q; want 2 and a reason", r.code, r.stderr)
			}
			r = mcpstdio(t, time.Minute, "unwrap", path)
			if r.code != 0 || !strings.Contains(r.stdout, "unwrapped fake: "+binary+" fake") {
				t.Errorf("unwrap: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
			}
			if b, _ := os.ReadFile(path); string(b) != orig {
				t.Errorf("after unwrap, the file is not the original:\n%s\nwant:\n%s", b, orig)
			}
			if r := mcpstdio(t, time.Minute, "unwrap", path); r.code != 0 || !strings.Contains(r.stdout, "nothing to change") {
				t.Errorf("unwrap again: exit %d, stdout %q", r.code, r.stdout)
			}
		})
	}
}

// newestRecord returns the newest record file in dir.
func newestRecord(t *testing.T, dir string) string {
	t.Helper()
	recs, _ := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if len(recs) == 0 {
		t.Fatalf("no record in %s", dir)
	}
	newest, when := "", time.Time{}
	for _, r := range recs {
		if fi, err := os.Stat(r); err == nil && fi.ModTime().After(when) {
			newest, when = r, fi.ModTime()
		}
	}
	return newest
}

// TestWrapRefuses: a file its host would not read, a name the file does
// not have, or a remote server named, is a usage error, and the file is
// left as it was, with no backup.
func TestWrapRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, text string
		args       []string
		want       string
	}{
		{".mcp.json", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}} // a comment\n}", nil, "line 1, column 40: a comment"},
		{"config.toml", "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n", nil, "line 3"},
		{".mcp.json", `{"mcpServers": {"a": {"command": "x"}}}`, []string{"b"}, `no server named "b"`},
		{".mcp.json", `{"mcpServers": {"a": {"url": "https://example.com"}}}`, []string{"a"}, "not a stdio server"},
		{"notes.json", `{"todo": []}`, nil, "names no MCP servers"},
	} {
		path, orig := writeWrapFile(t, tc.path, tc.text)
		r := mcpstdio(t, time.Minute, append([]string{"wrap", path}, tc.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("wrap %s %q: exit %d, stderr %q; want 2 and %q", tc.path, tc.args, r.code, r.stderr, tc.want)
		}
		if b, _ := os.ReadFile(path); string(b) != orig {
			t.Errorf("wrap %s changed the file it refused", tc.path)
		}
		if _, err := os.Stat(path + ".mcpstdio-backup"); err == nil {
			t.Errorf("wrap %s left a backup of a file it refused", tc.path)
		}
	}
}

// TestWrapSymlink: a config file that is a symbolic link stays one; the
// file it points to is edited.
func TestWrapSymlink(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links need privileges on Windows")
	}
	target, orig := writeWrapFile(t, ".mcp.json", wrapFiles[0].text)
	link := filepath.Join(t.TempDir(), "linked.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if r := mcpstdio(t, time.Minute, "wrap", "-dir", t.TempDir(), link); r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a symbolic link: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); string(b) == orig || !strings.Contains(string(b), `"proxy"`) {
		t.Errorf("the file the link points to was not wrapped:\n%s", b)
	}
	if r := mcpstdio(t, time.Minute, "unwrap", link); r.code != 0 {
		t.Fatalf("unwrap: exit %d: %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(target); string(b) != orig {
		t.Errorf("after unwrap through the link, the file is not the original:\n%s", b)
	}
}

// TestWrapRefusesGoRun: a go run build is deleted when it exits, so wrap
// refuses to write its path into a config.
func TestWrapRefusesGoRun(t *testing.T) {
	t.Parallel()
	path, _ := writeWrapFile(t, ".mcp.json", wrapFiles[0].text)
	dir := filepath.Join(t.TempDir(), "go-build1234", "b001", "exe")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, filepath.Base(binary))
	if err := os.Link(binary, exe); err != nil {
		t.Skipf("cannot link the command into a go-build directory: %v", err)
	}
	r := resultOf(cmdtest.Run(t, time.Minute, nil, nil, exe, "wrap", path))
	if r.code != 2 || !strings.Contains(r.stderr, "temporary build of go run") {
		t.Errorf("wrap from a go-build directory: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestWrapStatusFindsIt: wrap writes the state directory "mcpstdio
// status" reads (here MCPSTDIO_STATE_DIR's) into the entry, so that status
// finds the proxy however the host's environment differs (here its own
// MCPSTDIO_STATE_DIR).
func TestWrapStatusFindsIt(t *testing.T) {
	t.Parallel()
	path, _ := writeWrapFile(t, ".mcp.json", wrapFiles[0].text)
	mine := []string{state.EnvStateDir + "=" + t.TempDir()}
	if r := resultOf(cmdtest.Run(t, time.Minute, mine, nil, binary, "wrap", path)); r.code != 0 {
		t.Fatalf("wrap: exit %d: %s", r.code, r.stderr)
	}
	f, err := agentconfig.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := f.Servers[0]
	argv := append(append(append([]string{}, s.Proxy[1:]...), "--", s.Command), s.Args...)
	host := runningOf(cmdtest.Start(t, []string{state.EnvStateDir + "=" + t.TempDir()}, nil, s.Proxy[0], argv...))
	host.call(t, ping)
	io.WriteString(host.stdin, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":600000}}}`+"\n")
	var out cmdtest.Result
	poll.Wait(t, cmdtest.Bound(t), "status showing the wrapped server's pending call", func() bool {
		out = cmdtest.Run(t, time.Minute, mine, nil, binary, "status")
		return strings.Contains(out.Stdout, "pending id 2 tools/call slow")
	}, func() string { return out.Stdout + out.Stderr })
	if !strings.Contains(out.Stdout, binary+" fake") {
		t.Errorf("status does not name the server:\n%s", out.Stdout)
	}
	host.stdin.Close()
	host.wait(t)
}
