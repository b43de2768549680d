package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpstdio/mcpstdio/cmd/internal/agentconfig"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/internal/term"
)

const wrapUsage = `usage: mcpstdio wrap [-dir DIR] FILE [NAME...]
       mcpstdio unwrap FILE [NAME...]

wrap puts mcpstdio's proxy in front of the stdio MCP servers of an agent's
config file (Claude Code, Claude Desktop, Cursor, Gemini CLI, Qwen Code, VS
Code, opencode, Codex: see "mcpstdio probe -h"), all of them or those
NAMEd: each entry's command becomes this mcpstdio's absolute path and its
arguments "proxy -dir DIR --" and then the server's command and arguments,
so that the agent runs the server through the proxy, which records the
session in DIR, where "mcpstdio status" finds it. unwrap takes the proxy
out again.

Both change the bytes of those entries' command and arguments only: every
other byte of the file, comments and order included, stays as it was, and
unwrap after wrap gives back the original file byte for byte. Before
writing, both copy the file to FILE.mcpstdio-backup; they write the new
file whole or not at all (a new file renamed over the old, with its
permissions), and refuse a file that is not what its agent reads, or that
changed while they worked. Restart the agent, or reload its MCP servers,
for the change to take effect.

Exit status: 0 the file was written, or had nothing to change; 1 it could
not be written; 2 usage error (a file that cannot be read or parsed, a
NAME that is not a stdio server of the file).

flags:
`

type wrapFlags struct{ dir string }

func (f *wrapFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.dir, "dir", "", "the proxy's state `directory`, where it keeps records and status files (default: the one mcpstdio status reads)")
}

func runWrap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio wrap", flag.ContinueOnError)
	var f wrapFlags
	if ok, code := parseFlags(fs, &f, args, wrapUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(stderr, fs, errors.New("no config file"))
	}
	exe, err := proxyExecutable(stderr)
	if err != nil {
		return usageError(stderr, fs, err)
	}
	dir := f.dir
	if dir == "" {
		if dir, err = state.DefaultDir(); err != nil {
			return usageError(stderr, fs, fmt.Errorf("%v: name a state directory with -dir", err))
		}
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return usageError(stderr, fs, err)
	}
	return editConfig(fs, fs.Arg(0), fs.Args()[1:], stdout, stderr, func(file *agentconfig.File, s *agentconfig.Server) string {
		switch {
		case s.Bad != "":
			return s.Bad
		case !s.Stdio():
			return "not a stdio server (url " + s.URL + ")"
		case s.Wrapped():
			return "already runs the proxy"
		}
		return ""
	}, func(file *agentconfig.File, servers []*agentconfig.Server) ([]byte, error) {
		return file.Wrap(servers, exe, dir)
	}, "wrapped", func(s *agentconfig.Server) string {
		return fmt.Sprintf("%s proxy -dir %s -- %s", exe, dir, shellQuote(append([]string{s.Command}, s.Args...)))
	})
}

func runUnwrap(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpstdio unwrap", flag.ContinueOnError)
	if ok, code := parseFlags(fs, noFlags{}, args, wrapUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 {
		return usageError(stderr, fs, errors.New("no config file"))
	}
	return editConfig(fs, fs.Arg(0), fs.Args()[1:], stdout, stderr, func(file *agentconfig.File, s *agentconfig.Server) string {
		if !s.Wrapped() {
			return quiet + "does not run the proxy"
		}
		return ""
	}, func(file *agentconfig.File, servers []*agentconfig.Server) ([]byte, error) {
		return file.Unwrap(servers)
	}, "unwrapped", func(s *agentconfig.Server) string {
		return shellQuote(append([]string{s.Command}, s.Args...))
	})
}

// quiet begins a reason to leave a server alone that goes without saying
// when no server was named.
const quiet = "\x00"

// editConfig is wrap and unwrap: it reads the file at path, chooses the
// servers of names (all those skip has no reason to leave alone, for no
// names; a named one with a reason is a usage error), makes the new text
// with change, checks it, and writes it after a backup. done says what was
// done to a server, show what its entry runs now.
func editConfig(fs *flag.FlagSet, path string, names []string, stdout, stderr io.Writer,
	skip func(*agentconfig.File, *agentconfig.Server) string,
	change func(*agentconfig.File, []*agentconfig.Server) ([]byte, error),
	done string, show func(*agentconfig.Server) string) int {
	file, err := agentconfig.ReadFile(path)
	if err != nil {
		return usageError(stderr, fs, err)
	}
	chosen, err := file.Select(names)
	if err != nil {
		return usageError(stderr, fs, err)
	}
	var servers []*agentconfig.Server
	for _, s := range chosen {
		why := skip(file, s)
		switch {
		case why != "" && len(names) > 0:
			return usageError(stderr, fs, fmt.Errorf("%s: %s %s", path, term.Line(s.Label()), term.Line(strings.TrimPrefix(why, quiet))))
		case strings.HasPrefix(why, quiet):
		case why != "":
			fmt.Fprintf(stdout, "left alone %s: %s\n", term.Line(s.Label()), term.Line(why))
		default:
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		fmt.Fprintf(stdout, "%s: nothing to change\n", term.Line(path))
		return 0
	}
	text, err := change(file, servers)
	if err == nil {
		err = checkEdit(file, text, servers, done == "wrapped")
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (the file is unchanged)\n", fs.Name(), err)
		return 1
	}
	backup, err := writeConfig(path, file.Text(), text)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
		return 1
	}
	for _, s := range servers {
		fmt.Fprintf(stdout, "%s %s: %s\n", done, term.Line(s.Label()), term.Line(show(s)))
	}
	fmt.Fprintf(stdout, "%s written (the old one is %s); restart the agent, or reload its MCP servers\n", term.Line(path), term.Line(backup))
	return 0
}

// checkEdit parses the new text and checks that it names the servers the
// old one did, with those changed wrapped (or not) and the same commands:
// nothing is written that the agent would read otherwise.
func checkEdit(old *agentconfig.File, text []byte, changed []*agentconfig.Server, wrapped bool) error {
	f, err := agentconfig.Parse(old.Path, text)
	if err != nil {
		return fmt.Errorf("the edited file does not parse: %w", err)
	}
	if len(f.Servers) != len(old.Servers) {
		return fmt.Errorf("the edited file has %d servers, want %d", len(f.Servers), len(old.Servers))
	}
	for i, s := range f.Servers {
		o := old.Servers[i]
		want := o.Wrapped()
		for _, c := range changed {
			if c == o {
				want = wrapped
			}
		}
		if s.Name != o.Name || s.Wrapped() != want || s.Command != o.Command || strings.Join(s.Args, "\x00") != strings.Join(o.Args, "\x00") {
			return fmt.Errorf("the edited file's server %s is not what was meant", o.Label())
		}
	}
	return nil
}

// writeConfig replaces the file at path, whose content is old, with text:
// it copies old to path.mcpstdio-backup, checks that the file still holds
// old (an agent may rewrite its config at any time), and writes text to a
// new file that it renames over the old one, with the old one's
// permissions. A path that is a symbolic link keeps being one: the file
// it points to is replaced. It returns the backup's path.
func writeConfig(path string, old, text []byte) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	backup := real + ".mcpstdio-backup"
	if err := atomicfile.Write(backup, old); err != nil {
		return "", fmt.Errorf("backup: %v (the file is unchanged)", err)
	}
	if err := os.Chmod(backup, fi.Mode().Perm()); err != nil {
		return "", fmt.Errorf("backup: %v (the file is unchanged)", err)
	}
	now, err := os.ReadFile(real)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(now, old) {
		return "", fmt.Errorf("%s changed while it was being edited (is the agent running and writing it?): nothing written; try again", path)
	}
	if err := atomicfile.Write(real, text); err != nil { // keeps the file's permissions and, for root, its owner
		return "", fmt.Errorf("%v (the file is unchanged)", err)
	}
	return backup, nil
}

// proxyExecutable returns the absolute path of this mcpstdio, which the
// wrapped entries will run. A build that go run deletes when it exits is
// refused; one in npx's cache, which npm may clear, is warned about.
func proxyExecutable(stderr io.Writer) (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find this mcpstdio's path: %v", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return "", err
	}
	slash := filepath.ToSlash(exe)
	switch {
	case strings.Contains(slash, "/go-build"):
		return "", fmt.Errorf("this mcpstdio (%s) is a temporary build of go run, deleted when it exits: install it (go install github.com/mcpstdio/mcpstdio/cmd/mcpstdio@latest, or npm install -g mcpstdio) and run wrap from there", exe)
	case strings.Contains(slash, "/_npx/"):
		fmt.Fprintf(stderr, "mcpstdio wrap: warning: this mcpstdio runs from npx's cache (%s), which npm may clear; for a path that lasts, install it (npm install -g mcpstdio, or go install) and wrap from there\n", exe)
	}
	return exe, nil
}
