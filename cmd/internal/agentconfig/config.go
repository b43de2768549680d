// Package agentconfig reads the MCP servers an agent's config file names,
// and puts a command in front of their entries and takes it out again, by
// editing the bytes of those entries alone: every other byte of the file,
// comments and order included, stays as it was.
//
// The formats, told apart by the file's name and its keys:
//
//   - "mcpServers" (JSON): Claude Code (~/.claude.json, with its projects'
//     servers too, and a project's .mcp.json), Claude Desktop
//     (claude_desktop_config.json), Cursor (mcp.json), Gemini CLI and Qwen
//     Code (settings.json, where comments are allowed);
//   - "servers" (JSON with comments and trailing commas): VS Code's mcp.json
//     (and "mcp": {"servers": ...} in its settings.json);
//   - "mcp" (JSON with comments and trailing commas): opencode.json(c),
//     whose command is one array;
//   - [mcp_servers.NAME] (TOML): Codex's config.toml.
package agentconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Format is the shape of a config file.
type Format int

// The formats.
const (
	MCPServers Format = iota + 1 // "mcpServers": Claude Code, Claude Desktop, Cursor, Gemini CLI, Qwen Code
	VSCode                       // "servers": VS Code
	OpenCode                     // "mcp": opencode
	Codex                        // [mcp_servers.NAME]: Codex
)

func (f Format) String() string {
	switch f {
	case MCPServers:
		return "mcpServers (Claude Code, Claude Desktop, Cursor, Gemini CLI, Qwen Code)"
	case VSCode:
		return "servers (VS Code)"
	case OpenCode:
		return "mcp (opencode)"
	case Codex:
		return "mcp_servers (Codex)"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// File is a parsed config file.
type File struct {
	Path    string // as given to Parse
	Format  Format
	Servers []*Server // in the file's order

	text   []byte
	vars   expander
	syntax string // what the host reads, for messages
}

// Server is one entry of a config file, as written: variables are not
// expanded (Launch does that).
type Server struct {
	Name string
	// Project is, in Claude Code's ~/.claude.json, the project directory
	// whose entry this is ("" for the user's own servers).
	Project string
	// Command and Args are what the host runs; in an entry that runs
	// mcpstdio's proxy (Wrapped), the server the proxy runs.
	Command string
	Args    []string
	Env     map[string]string // the entry's environment
	EnvFile string            // a file of KEY=VALUE lines to add to it (VS Code, Cursor)
	Dir     string            // the working directory the entry names
	// URL is a remote server's address: it is not a stdio server.
	URL      string
	Disabled bool
	// Proxy is, in an entry that runs mcpstdio's proxy in front of the
	// server, the proxy's command line before its "--"; nil otherwise.
	Proxy []string
	// Bad says why the entry cannot be used ("args is not an array of
	// strings"); the rest of the file is still read.
	Bad string

	loc location
}

// Stdio reports whether s is a stdio server: a command, not a URL.
func (s *Server) Stdio() bool { return s.URL == "" && s.Bad == "" && s.Command != "" }

// Wrapped reports whether s runs mcpstdio's proxy in front of its server.
func (s *Server) Wrapped() bool { return s.Proxy != nil }

// Label is how messages name s: its name, and its project if it has one.
func (s *Server) Label() string {
	if s.Project != "" {
		return s.Name + " (project " + s.Project + ")"
	}
	return s.Name
}

// ReadFile reads and parses the config file at path.
func ReadFile(path string) (*File, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, text)
}

// Parse parses text, the content of the config file at path (its name
// and directory choose the format and how relative paths and variables
// resolve). A file that is not what its host reads, or that names no MCP
// servers in a format above, is an error naming the file; an entry that
// cannot be used is a Server with Bad set.
func Parse(path string, text []byte) (*File, error) {
	f := &File{Path: path, text: text, vars: newExpander(path)}
	var err error
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		f.Format, f.syntax = Codex, "TOML"
		err = f.parseTOML()
	} else {
		err = f.parseJSONFile()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Text returns the file's content, as parsed.
func (f *File) Text() []byte { return f.text }

// Select returns the servers named by names (a name selects every entry
// of that name: in ~/.claude.json one per project that has it), or all of
// them for no names. A name no entry has is an error.
func (f *File) Select(names []string) ([]*Server, error) {
	if len(names) == 0 {
		return slices.Clone(f.Servers), nil
	}
	var out []*Server
	var missing []string
	for _, n := range names {
		found := false
		for _, s := range f.Servers {
			if s.Name == n && !slices.Contains(out, s) {
				out = append(out, s)
				found = true
			}
		}
		if !found && !slices.ContainsFunc(out, func(s *Server) bool { return s.Name == n }) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		var have []string
		for _, s := range f.Servers {
			if !slices.Contains(have, s.Name) {
				have = append(have, s.Name)
			}
		}
		return nil, fmt.Errorf("%s has no server named %s (it has: %s)", f.Path, strings.Join(quoteAll(missing), ", "), strings.Join(have, ", "))
	}
	return out, nil
}

func quoteAll(s []string) []string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return q
}

// errNoServers is a file in none of the formats.
var errNoServers = errors.New(`names no MCP servers: want "mcpServers" (Claude Code, Claude Desktop, Cursor, Gemini CLI, Qwen Code), "servers" (VS Code's mcp.json), "mcp" (opencode.json), or a .toml file with [mcp_servers.NAME] tables (Codex)`)
