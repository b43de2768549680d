package agentconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// parseJSONFile reads the JSON formats. The format is told by the file's
// name (opencode.json) or its keys; how strict the parse is, by what the
// host reads: Claude Code, Claude Desktop and Cursor plain JSON, Gemini CLI
// and Qwen Code comments (strip-json-comments), VS Code and opencode
// comments and trailing commas (JSONC).
func (f *File) parseJSONFile() error {
	lenient := jsonSyntax{comments: true, trailingCommas: true}
	root, err := parseJSON(f.text, lenient)
	if err != nil {
		return err
	}
	if root.kind != '{' {
		return errNoServers
	}
	base := strings.ToLower(filepath.Base(f.Path))
	mcpServers, _ := root.member("mcpServers")
	servers, _ := root.member("servers")
	mcp, _ := root.member("mcp")
	switch {
	case base == "opencode.json" || base == "opencode.jsonc":
		f.Format = OpenCode
	case mcpServers != nil || projectServers(root):
		f.Format = MCPServers
	case servers != nil:
		f.Format = VSCode
	case base == "settings.json" && mcp != nil && mcp.kind == '{':
		// VS Code's user settings: "mcp": {"servers": {...}}.
		if servers, _ = mcp.member("servers"); servers == nil {
			return errNoServers
		}
		f.Format = VSCode
	case mcp != nil:
		f.Format = OpenCode
	default:
		return errNoServers
	}
	syntax := lenient
	if f.Format == MCPServers {
		syntax = jsonSyntax{comments: base == "settings.json"}
		if _, err := parseJSON(f.text, syntax); err != nil {
			return err
		}
	}
	f.syntax = syntax.String()
	switch f.Format {
	case MCPServers:
		if err := f.jsonServers("mcpServers", "", mcpServers); err != nil {
			return err
		}
		if projects, _ := root.member("projects"); projects != nil && projects.kind == '{' {
			for _, p := range projects.members {
				if ps, _ := p.val.member("mcpServers"); ps != nil {
					if err := f.jsonServers("projects."+p.key+".mcpServers", p.key, ps); err != nil {
						return err
					}
				}
			}
		}
	case VSCode:
		return f.jsonServers("servers", "", servers)
	case OpenCode:
		return f.jsonServers("mcp", "", mcp)
	}
	return nil
}

// projectServers reports whether root is Claude Code's ~/.claude.json
// with servers in a project's entry.
func projectServers(root *jsonValue) bool {
	projects, _ := root.member("projects")
	if projects == nil || projects.kind != '{' {
		return false
	}
	for _, p := range projects.members {
		if ps, _ := p.val.member("mcpServers"); ps != nil {
			return true
		}
	}
	return false
}

// jsonServers adds the entries of the object v (nil: none), which the
// file calls key.
func (f *File) jsonServers(key, project string, v *jsonValue) error {
	if v == nil {
		return nil
	}
	if v.kind != '{' {
		return fmt.Errorf("%q is not an object of servers", key)
	}
	for i, m := range v.members {
		var s *Server
		if f.Format == OpenCode {
			s = f.openCodeEntry(m.key, m.val)
		} else {
			s = f.jsonEntry(m.key, m.val)
		}
		s.Project = project
		if _, last := v.member(m.key); last != i {
			s.Bad = "named again later in the file: the host reads the later entry"
		}
		f.Servers = append(f.Servers, s)
	}
	return nil
}

// jsonEntry reads an entry of mcpServers or servers: command, args, env,
// envFile and cwd; a url, or a type other than stdio, is a remote server.
func (f *File) jsonEntry(name string, v *jsonValue) *Server {
	s := &Server{Name: name}
	if v.kind != '{' {
		s.Bad = "the entry is not a JSON object"
		return s
	}
	var err error
	typ := jsonString(v, "type", &err)
	for _, k := range []string{"url", "httpUrl", "serverUrl"} {
		if u := jsonString(v, k, &err); u != "" && s.URL == "" {
			s.URL = u
		}
	}
	if s.URL == "" && typ != "" && typ != "stdio" {
		s.URL = "(type " + typ + ")"
	}
	s.Command = jsonString(v, "command", &err)
	cmd, _ := v.member("command")
	argsVal, argsIndex := v.member("args")
	args := jsonStrings(v, "args", &err)
	s.Env = jsonStringMap(v, "env", &err)
	s.EnvFile = jsonString(v, "envFile", &err)
	s.Dir = jsonString(v, "cwd", &err)
	if d, _ := v.member("disabled"); d != nil && string(f.text[d.start:d.end]) == "true" {
		s.Disabled = true
	}
	if err != nil {
		s.Bad = err.Error()
		return s
	}
	if s.URL != "" {
		return s
	}
	if cmd == nil {
		s.Bad = "no command and no url"
		return s
	}
	s.Proxy, s.Command, s.Args = splitProxy(s.Command, args)
	s.loc = location{cmd: span{cmd.start, cmd.end}, quote: jsonQuote,
		insertPos: cmd.end, insertBefore: `, "args": `}
	if argsVal != nil {
		s.loc.args = jsonArray(argsVal)
		s.loc.argsMember = memberSpan(v, argsIndex)
	}
	return s
}

// openCodeEntry reads an entry of opencode's mcp: type local with a
// command array and an environment, or type remote with a url; enabled
// false turns it off.
func (f *File) openCodeEntry(name string, v *jsonValue) *Server {
	s := &Server{Name: name}
	if v.kind != '{' {
		s.Bad = "the entry is not a JSON object"
		return s
	}
	var err error
	typ := jsonString(v, "type", &err)
	s.URL = jsonString(v, "url", &err)
	if s.URL == "" && typ == "remote" {
		s.URL = "(type remote)"
	}
	cmd, _ := v.member("command")
	argv := jsonStrings(v, "command", &err)
	s.Env = jsonStringMap(v, "environment", &err)
	if e, _ := v.member("enabled"); e != nil && string(f.text[e.start:e.end]) == "false" {
		s.Disabled = true
	}
	switch {
	case err != nil:
		s.Bad = err.Error()
	case s.URL != "":
	case len(argv) == 0:
		s.Bad = "no command (an array of the program and its arguments) and no url"
	default:
		s.Proxy, s.Command, s.Args = splitProxy(argv[0], argv[1:])
		s.loc = location{cmd: span{cmd.start, cmd.end}, cmdArray: true, args: jsonArray(cmd), quote: jsonQuote}
	}
	return s
}

// jsonArray is where an array's brackets and elements are.
func jsonArray(v *jsonValue) *array {
	a := &array{open: v.start, close: v.end - 1}
	for _, e := range v.elems {
		a.elems = append(a.elems, span{e.start, e.end})
	}
	return a
}

// memberSpan is the bytes to delete to take member i out of the object v:
// from the end of the member before it (its comma and what follows), or
// to the start of the member after it.
func memberSpan(v *jsonValue, i int) span {
	m := v.members[i]
	switch {
	case i > 0:
		return span{v.members[i-1].val.end, m.val.end}
	case i+1 < len(v.members):
		return span{m.keyStart, v.members[i+1].keyStart}
	}
	return span{m.keyStart, m.val.end}
}

// jsonString returns the string member key of v ("" if there is none); a
// member of another type sets *err, if it is nil.
func jsonString(v *jsonValue, key string, err *error) string {
	m, _ := v.member(key)
	if m == nil {
		return ""
	}
	if m.kind != '"' {
		setErr(err, "%s is not a string", key)
		return ""
	}
	return m.str
}

func jsonStrings(v *jsonValue, key string, err *error) []string {
	m, _ := v.member(key)
	if m == nil {
		return nil
	}
	var out []string
	for _, e := range m.elems {
		if e.kind != '"' {
			break
		}
		out = append(out, e.str)
	}
	if m.kind != '[' || len(out) != len(m.elems) {
		setErr(err, "%s is not an array of strings", key)
		return nil
	}
	return out
}

func jsonStringMap(v *jsonValue, key string, err *error) map[string]string {
	m, _ := v.member(key)
	if m == nil {
		return nil
	}
	if m.kind != '{' {
		setErr(err, "%s is not an object of strings", key)
		return nil
	}
	out := map[string]string{}
	for _, e := range m.members {
		if e.val.kind != '"' {
			setErr(err, "%s.%s is not a string", key, e.key)
			return nil
		}
		out[e.key] = e.val.str
	}
	return out
}

func setErr(err *error, format string, args ...any) {
	if *err == nil {
		*err = fmt.Errorf(format, args...)
	}
}

// jsonQuote writes s as a JSON string, which is also a TOML basic string
// once DEL is escaped (TOML does not allow it raw).
func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err) // a string always encodes
	}
	return strings.ReplaceAll(strings.TrimSuffix(b.String(), "\n"), "\x7f", `\u007f`)
}

var errNotStdio = errors.New("not a stdio server")
