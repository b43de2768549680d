package agentconfig

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Launch is how to start a stdio server as its host would.
type Launch struct {
	Argv []string // the program and its arguments
	Env  []string // KEY=VALUE to add to the environment: the entry's env file's, then its env
	Dir  string   // the working directory; "" for the current one
}

// expander resolves what a file's entries leave to their host: the
// variables in their strings, relative paths.
type expander struct {
	// project is the directory of the project whose file this is: the
	// folder that holds .vscode, .cursor, .gemini, .qwen, .codex or
	// .claude for a file in one of those, else the file's own. user is
	// set for a user's file (in the home or the config directory): its
	// servers run where the host was started.
	project string
	user    bool
	home    string
	lookup  func(string) (string, bool)
}

func newExpander(path string) expander {
	e := expander{lookup: os.LookupEnv}
	e.home, _ = os.UserHomeDir()
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	dir := filepath.Dir(abs)
	switch filepath.Base(dir) {
	case ".vscode", ".cursor", ".gemini", ".qwen", ".codex", ".claude":
		dir = filepath.Dir(dir)
	}
	e.project = dir
	config, _ := os.UserConfigDir()
	e.user = dir == e.home || (config != "" && within(dir, config)) ||
		strings.EqualFold(filepath.Base(abs), "claude_desktop_config.json")
	return e
}

// within reports whether dir is root or below it.
func within(dir, root string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// Launch returns how to start s: its variables expanded as its host
// expands them, its env file read, its working directory made absolute.
// The working directory is the entry's (relative to the project), else
// Claude Code's project for a project's entry in ~/.claude.json, else the
// project's directory for a project's file, else "" (where the host was
// started: the current directory). The variables:
//
//   - mcpServers and servers: ${NAME} and ${NAME:-default} (Claude Code),
//     ${env:NAME}, ${userHome}, ${workspaceFolder},
//     ${workspaceFolderBasename}, ${pathSeparator} and ${/} (VS Code,
//     Cursor); in a settings.json (Gemini CLI, Qwen Code) $NAME too, in
//     env values;
//   - opencode: {env:NAME} and {file:PATH};
//   - Codex: none.
//
// A variable only the host can fill in (${input:...}, a ${NAME} that is
// not set) is an error that names it; so is an entry that is not a stdio
// server, or that cannot be used (Bad).
func (f *File) Launch(s *Server) (Launch, error) {
	if !s.Stdio() {
		if s.Bad != "" {
			return Launch{}, errors.New(s.Bad)
		}
		return Launch{}, fmt.Errorf("%w (url %s)", errNotStdio, s.URL)
	}
	x := &expansion{f: f}
	var l Launch
	for _, a := range append([]string{s.Command}, s.Args...) {
		l.Argv = append(l.Argv, x.expand(a, false))
	}
	if s.Dir != "" {
		l.Dir = x.path(x.expand(s.Dir, false))
	} else if s.Project != "" {
		l.Dir = s.Project
	} else if !f.vars.user {
		l.Dir = f.vars.project
	}
	if s.EnvFile != "" {
		l.Env = append(l.Env, x.envFile(x.path(x.expand(s.EnvFile, false)))...)
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		l.Env = append(l.Env, k+"="+x.expand(s.Env[k], true))
	}
	if x.err != nil {
		return Launch{}, x.err
	}
	return l, nil
}

// expansion expands the strings of one entry, keeping the first error.
type expansion struct {
	f   *File
	err error
}

var (
	dollarBrace = regexp.MustCompile(`\$\{([^}]*)\}`)
	dollarName  = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)
	openCodeVar = regexp.MustCompile(`\{(env|file):([^}]*)\}`)
)

// expand expands s as the file's host does; env is set for a value of
// the entry's environment.
func (x *expansion) expand(s string, env bool) string {
	v := x.f.vars
	switch x.f.Format {
	case Codex:
		return s
	case OpenCode:
		return openCodeVar.ReplaceAllStringFunc(s, func(m string) string {
			p := openCodeVar.FindStringSubmatch(m)
			if p[1] == "env" {
				val, _ := v.lookup(p[2])
				return val
			}
			b, err := os.ReadFile(x.path(strings.Replace(p[2], "~/", v.home+"/", 1)))
			if err != nil {
				x.fail("{file:%s}: %v", p[2], err)
			}
			return strings.TrimSpace(string(b))
		})
	}
	s = dollarBrace.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		switch name {
		case "userHome":
			return v.home
		case "workspaceFolder":
			return v.project
		case "workspaceFolderBasename":
			return filepath.Base(v.project)
		case "pathSeparator", "/":
			return string(filepath.Separator)
		}
		if n, ok := strings.CutPrefix(name, "env:"); ok {
			val, _ := v.lookup(n)
			return val
		}
		if strings.Contains(name, ":") && !strings.Contains(name, ":-") {
			x.fail("%s is filled in by the host (probe cannot ask for it): set the value in the entry", m)
			return m
		}
		n, def, hasDef := strings.Cut(name, ":-")
		if val, ok := v.lookup(n); ok {
			return val
		}
		if !hasDef {
			x.fail("%s is not set in this environment", m)
		}
		return def
	})
	if env && strings.EqualFold(filepath.Base(x.f.Path), "settings.json") {
		s = dollarName.ReplaceAllStringFunc(s, func(m string) string {
			val, _ := v.lookup(m[1:])
			return val
		})
	}
	return s
}

func (x *expansion) fail(format string, args ...any) {
	if x.err == nil {
		x.err = fmt.Errorf(format, args...)
	}
}

// path makes p absolute against the project's directory.
func (x *expansion) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(x.f.vars.project, p)
}

// envFile reads a file of KEY=VALUE lines (blank lines and # comments
// skipped, "export " allowed, a value in quotes unquoted).
func (x *expansion) envFile(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		x.fail("envFile: %v", err)
		return nil
	}
	var env []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, val, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			x.fail("envFile %s: line %d is not KEY=VALUE", path, n)
			return nil
		}
		val = strings.TrimSpace(val)
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		env = append(env, strings.TrimSpace(k)+"="+val)
	}
	return env
}
