package agentconfig

import (
	"bytes"
	"errors"
	"slices"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// parseTOML reads Codex's config.toml: go-toml decodes it (and refuses
// what is not TOML, or defines a key twice), and its parser, which keeps
// the byte range of every key and value, says where each server's command
// and args are.
func (f *File) parseTOML() error {
	var doc map[string]any
	if err := toml.Unmarshal(f.text, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return &SyntaxError{Line: row, Column: col, Msg: de.Error()}
		}
		return err
	}
	raw, ok := doc["mcp_servers"]
	if !ok {
		return nil
	}
	servers, ok := raw.(map[string]any)
	if !ok {
		return errors.New("mcp_servers is not a table of servers")
	}
	w := &tomlWalker{text: f.text, entries: map[string]*tomlEntry{}}
	w.p.Reset(f.text)
	var table []string
	for w.p.NextExpression() {
		e := w.p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyOf(e.Key())
			w.seen(table)
		case unstable.KeyValue:
			w.keyValue(table, e, nil)
		}
	}
	if err := w.p.Error(); err != nil {
		return err // toml.Unmarshal has read it: not expected
	}
	for name := range servers {
		if !slices.Contains(w.order, name) {
			w.order = append(w.order, name) // not expected either
		}
	}
	for _, name := range w.order {
		if v, ok := servers[name]; ok {
			f.Servers = append(f.Servers, f.codexEntry(name, v, w.entries[name]))
		}
	}
	return nil
}

// tomlEntry is where a server's command and args key-values are.
type tomlEntry struct {
	command, args *tomlKV
}

// tomlKV is a key-value: its bytes, its key's last part, its value (and
// the strings in it if it is an array), and the key-values beside it when
// it is in an inline table (nil otherwise). The parser's nodes last only
// until its next expression: what is needed is copied out.
type tomlKV struct {
	start, end int // the key-value, from its key to the end of its value
	lastKey    int // where the key's last part begins
	value      span
	array      bool
	strings    []span    // an array's elements that are strings
	siblings   []*tomlKV // the inline table's key-values, this one among them
}

type tomlWalker struct {
	p       unstable.Parser
	text    []byte
	order   []string // server names, as they first appear
	entries map[string]*tomlEntry
}

// seen notes the server a key path names.
func (w *tomlWalker) seen(path []string) {
	if len(path) >= 2 && path[0] == "mcp_servers" && !slices.Contains(w.order, path[1]) {
		w.order = append(w.order, path[1])
	}
}

// keyValue walks the key-value e in the table path, and the inline tables
// it holds. siblings is the inline table e is in, if it is in one.
func (w *tomlWalker) keyValue(path []string, e *unstable.Node, siblings *[]*tomlKV) {
	it := e.Key()
	var last *unstable.Node
	var key []string
	for it.Next() {
		last = it.Node()
		key = append(key, string(last.Data))
	}
	full := slices.Concat(path, key)
	w.seen(full)
	kv := &tomlKV{start: int(e.Raw.Offset), end: int(e.Raw.Offset + e.Raw.Length), lastKey: int(last.Raw.Offset)}
	if v := e.Value(); v.Kind == unstable.Array {
		kv.array = true
		elems := v.Children()
		for elems.Next() {
			if n := elems.Node(); n.Kind == unstable.String {
				kv.strings = append(kv.strings, span{int(n.Raw.Offset), int(n.Raw.Offset + n.Raw.Length)})
			}
		}
	}
	// The value begins after the key, "=" and the blanks around it.
	i := int(last.Raw.Offset + last.Raw.Length)
	for i < kv.end && (w.text[i] == ' ' || w.text[i] == '\t' || w.text[i] == '=') {
		i++
	}
	kv.value = span{i, kv.end}
	if siblings != nil {
		*siblings = append(*siblings, kv) // the caller sets kv.siblings once it has them all
	}
	if len(full) == 3 && full[0] == "mcp_servers" {
		ent := w.entries[full[1]]
		if ent == nil {
			ent = &tomlEntry{}
			w.entries[full[1]] = ent
		}
		switch full[2] {
		case "command":
			ent.command = kv
		case "args":
			ent.args = kv
		}
	}
	if v := e.Value(); v.Kind == unstable.InlineTable {
		var inner []*tomlKV
		children := v.Children()
		for children.Next() {
			if c := children.Node(); c.Kind == unstable.KeyValue {
				w.keyValue(full, c, &inner)
			}
		}
		for _, c := range inner {
			c.siblings = inner
		}
	}
}

func keyOf(it unstable.Iterator) []string {
	var key []string
	for it.Next() {
		key = append(key, string(it.Node().Data))
	}
	return key
}

// codexEntry reads a server of Codex's mcp_servers: command, args, env
// and cwd, or a url; enabled = false turns it off.
func (f *File) codexEntry(name string, v any, ent *tomlEntry) *Server {
	s := &Server{Name: name}
	m, ok := v.(map[string]any)
	if !ok {
		s.Bad = "the entry is not a table"
		return s
	}
	var err error
	str := func(key string) string {
		x, ok := m[key]
		if !ok {
			return ""
		}
		sv, ok := x.(string)
		if !ok {
			setErr(&err, "%s is not a string", key)
		}
		return sv
	}
	s.URL = str("url")
	s.Command = str("command")
	s.Dir = str("cwd")
	var args []string
	if a, ok := m["args"]; ok {
		list, ok := a.([]any)
		for _, x := range list {
			if sv, isStr := x.(string); isStr {
				args = append(args, sv)
			}
		}
		if !ok || len(args) != len(list) {
			setErr(&err, "args is not an array of strings")
		}
	}
	if e, ok := m["env"]; ok {
		env, ok := e.(map[string]any)
		s.Env = map[string]string{}
		for k, x := range env {
			if sv, isStr := x.(string); isStr {
				s.Env[k] = sv
			} else {
				setErr(&err, "env.%s is not a string", k)
			}
		}
		if !ok {
			setErr(&err, "env is not a table of strings")
		}
	}
	if e, ok := m["enabled"].(bool); ok && !e {
		s.Disabled = true
	}
	switch {
	case err != nil:
		s.Bad = err.Error()
		return s
	case s.URL != "":
		return s
	case s.Command == "" || ent == nil || ent.command == nil:
		s.Bad = "no command and no url"
		return s
	}
	s.Proxy, s.Command, s.Args = splitProxy(s.Command, args)
	s.loc = f.tomlLocation(ent)
	if ent.args != nil && !ent.args.array {
		s.Bad = "args is not an array"
	}
	return s
}

// tomlLocation is where Wrap and Unwrap edit a Codex entry. An args
// key-value Wrap adds goes, in a [mcp_servers.NAME] table, on a line of
// its own after the command's, with the command's indentation and key
// prefix (mcp_servers.NAME. for dotted keys); in an inline table, after
// the command in the same table.
func (f *File) tomlLocation(ent *tomlEntry) location {
	c := ent.command
	prefix := string(f.text[c.start:c.lastKey])
	l := location{cmd: c.value, quote: jsonQuote}
	if c.siblings != nil {
		l.insertPos, l.insertBefore = c.end, ", "+prefix+"args = "
	} else {
		ls := bytes.LastIndexByte(f.text[:c.start], '\n') + 1
		indent := ""
		if len(bytes.TrimLeft(f.text[ls:c.start], " \t")) == 0 {
			indent = string(f.text[ls:c.start])
		}
		nl := "\n"
		if j := bytes.IndexByte(f.text[c.end:], '\n'); j >= 0 {
			l.insertPos = c.end + j + 1
			if j > 0 && f.text[c.end+j-1] == '\r' {
				nl = "\r\n"
			}
			l.insertBefore, l.insertAfter = indent+prefix+"args = ", nl
		} else {
			l.insertPos, l.insertBefore = len(f.text), nl+indent+prefix+"args = "
		}
	}
	a := ent.args
	if a == nil {
		return l
	}
	l.args = &array{open: a.value.start, close: a.value.end - 1, elems: a.strings}
	if a.siblings != nil {
		i := slices.Index(a.siblings, a)
		switch {
		case i > 0:
			l.argsMember = span{a.siblings[i-1].end, a.end}
		case i+1 < len(a.siblings):
			l.argsMember = span{a.start, a.siblings[i+1].start}
		default:
			l.argsMember = span{a.start, a.end}
		}
		return l
	}
	// A line of its own: the whole line, its end included.
	start, end := a.start, a.end
	ls := bytes.LastIndexByte(f.text[:start], '\n') + 1
	if len(bytes.TrimLeft(f.text[ls:start], " \t")) == 0 {
		start = ls
	}
	j := end
	for j < len(f.text) && (f.text[j] == ' ' || f.text[j] == '\t') {
		j++
	}
	switch {
	case bytes.HasPrefix(f.text[j:], []byte("\r\n")):
		end = j + 2
	case j < len(f.text) && f.text[j] == '\n':
		end = j + 1
	case j == len(f.text) && start == ls && start > 0:
		// The last line, with no newline: take the one before it.
		end = j
		start--
		if start > 0 && f.text[start-1] == '\r' {
			start--
		}
	}
	l.argsMember = span{start, end}
	return l
}
