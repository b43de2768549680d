package agentconfig

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// location is where an entry's command line is in the text: what Wrap and
// Unwrap edit, and nothing else.
type location struct {
	// cmd is the command string; with cmdArray (opencode) the array that
	// holds the command and its arguments, which args then also is.
	cmd      span
	cmdArray bool
	args     *array // the args array; nil if the entry has none
	// An entry without args gets insertBefore+array+insertAfter at
	// insertPos; argsMember is what to delete to take an args member out.
	insertPos                 int
	insertBefore, insertAfter string
	argsMember                span
	quote                     func(string) string // a string as the file writes it
}

// span is text[start:end].
type span struct{ start, end int }

// array is where an array's brackets and elements are.
type array struct {
	open, close int // the offsets of "[" and "]"
	elems       []span
}

// splitProxy splits an entry's command line into the proxy's part, up to
// its "--", and the server's, when the command is mcpstdio's proxy
// ("mcpstdio proxy [flags] -- server..." or "mcpstdio-proxy [flags] --
// server...", the program's name holding "mcpstdio" and ".exe" or not);
// proxy is nil otherwise.
func splitProxy(command string, args []string) (proxy []string, cmd string, rest []string) {
	argv := append([]string{command}, args...)
	base := command[strings.LastIndexAny(command, `/\`)+1:]
	base = strings.TrimSuffix(strings.ToLower(base), ".exe")
	var flags []string
	switch {
	case strings.HasSuffix(base, "mcpstdio-proxy"):
		flags = argv[1:]
	case strings.Contains(base, "mcpstdio") && len(argv) > 1 && argv[1] == "proxy":
		flags = argv[2:]
	default:
		return nil, command, args
	}
	i := slices.Index(flags, "--")
	if i < 0 || i == len(flags)-1 {
		return nil, command, args
	}
	k := len(argv) - len(flags) + i
	return argv[:k], argv[k+1], argv[k+2:]
}

// markerFlag is how the proxy's state directory is written in an entry
// that had no args member before Wrap gave it one ("-dir=DIR", against
// "-dir", "DIR" in an entry whose args Wrap added to), so that Unwrap
// takes out that member and leaves an entry's own empty args alone.
const markerFlag = "-dir="

// edit replaces text[start:end] with s.
type edit struct {
	start, end int
	s          string
}

// apply applies edits, which must not overlap, to text.
func apply(text []byte, edits []edit) []byte {
	slices.SortFunc(edits, func(a, b edit) int { return b.start - a.start })
	out := slices.Clone(text)
	for _, e := range edits {
		out = slices.Concat(out[:e.start], []byte(e.s), out[e.end:])
	}
	return out
}

// Wrap returns the file's text with the proxy of the mcpstdio command at
// exe put in front of each of servers, which must be this file's: the
// command becomes exe and the arguments "proxy -dir DIR --" then the
// entry's command and arguments, DIR the proxy's state directory (where
// "mcpstdio status" looks). Only the bytes of each entry's command and
// args change; the new elements go before the first old one, one per line
// in an array written one element per line. A server that is not a stdio
// server, or is already wrapped, is an error.
func (f *File) Wrap(servers []*Server, exe, dir string) ([]byte, error) {
	var edits []edit
	for _, s := range servers {
		if err := f.wrappable(s); err != nil {
			return nil, err
		}
		l := s.loc
		q := l.quote
		raw := string(f.text[l.cmd.start:l.cmd.end])
		switch {
		case l.cmdArray:
			edits = append(edits, f.prepend(l.args, q(exe), q("proxy"), q("-dir"), q(dir), q("--")))
		case l.args != nil:
			edits = append(edits, edit{l.cmd.start, l.cmd.end, q(exe)}, f.prepend(l.args, q("proxy"), q("-dir"), q(dir), q("--"), raw))
		default:
			arr := "[" + strings.Join([]string{q("proxy"), q(markerFlag + dir), q("--"), raw}, ", ") + "]"
			edits = append(edits, edit{l.cmd.start, l.cmd.end, q(exe)}, edit{l.insertPos, l.insertPos, l.insertBefore + arr + l.insertAfter})
		}
	}
	return apply(f.text, edits), nil
}

// prepend is the edit that puts elems (as the file writes them) before
// the array's first element: after "[" in an empty array, else each
// followed by ", ", or, when the first element begins a line, by a comma,
// a newline and that line's indentation.
func (f *File) prepend(a *array, elems ...string) edit {
	if len(a.elems) == 0 {
		return edit{a.open + 1, a.open + 1, strings.Join(elems, ", ")}
	}
	first := a.elems[0].start
	sep := ", "
	between := f.text[a.open+1 : first]
	if nl := bytes.LastIndexByte(between, '\n'); nl >= 0 && len(bytes.TrimLeft(between[nl+1:], " \t")) == 0 {
		sep = ",\n" + string(between[nl+1:])
		if nl > 0 && between[nl-1] == '\r' {
			sep = ",\r\n" + string(between[nl+1:])
		}
	}
	return edit{first, first, strings.Join(elems, sep) + sep}
}

// wrappable says why s cannot be wrapped, if it cannot.
func (f *File) wrappable(s *Server) error {
	switch {
	case !slices.Contains(f.Servers, s):
		return fmt.Errorf("%s: no server %s in this file", f.Path, s.Label())
	case s.Bad != "":
		return fmt.Errorf("%s: %s: %s", f.Path, s.Label(), s.Bad)
	case !s.Stdio():
		return fmt.Errorf("%s: %s is %w (url %s): there is no command to put the proxy in front of", f.Path, s.Label(), errNotStdio, s.URL)
	case s.Wrapped():
		return fmt.Errorf("%s: %s already runs the proxy (%s)", f.Path, s.Label(), strings.Join(s.Proxy, " "))
	}
	return nil
}

// Unwrap returns the file's text with the proxy taken out of each of
// servers, which must be this file's and wrapped: the command and the
// arguments become those after the proxy's "--" again. On a file Wrap
// wrote, it gives back the text Wrap was given, byte for byte; on one
// another program has rewritten since, the same entries, as that program
// formats them. A server that is not wrapped is an error.
func (f *File) Unwrap(servers []*Server) ([]byte, error) {
	var edits []edit
	for _, s := range servers {
		if !slices.Contains(f.Servers, s) {
			return nil, fmt.Errorf("%s: no server %s in this file", f.Path, s.Label())
		}
		if !s.Wrapped() {
			return nil, fmt.Errorf("%s: %s does not run the proxy", f.Path, s.Label())
		}
		l := s.loc
		a := l.args
		// The proxy's command line is Proxy, then "--", then the server's
		// command: in an array of the whole command line (opencode) "--"
		// is element k, and the server's command follows; in args, which
		// leaves out the proxy's command, the server's command is element
		// k. What goes is everything before the element after it.
		k := len(s.Proxy)
		if l.cmdArray {
			edits = append(edits, edit{a.elems[0].start, a.elems[k+1].start, ""})
			continue
		}
		cmd := a.elems[k]
		edits = append(edits, edit{l.cmd.start, l.cmd.end, string(f.text[cmd.start:cmd.end])})
		marker := slices.ContainsFunc(s.Proxy, func(p string) bool { return strings.HasPrefix(p, markerFlag) })
		switch {
		case marker && len(s.Args) == 0:
			edits = append(edits, edit{l.argsMember.start, l.argsMember.end, ""})
		case k+1 < len(a.elems):
			edits = append(edits, edit{a.elems[0].start, a.elems[k+1].start, ""})
		default: // the array was empty
			edits = append(edits, edit{a.open + 1, cmd.end, ""})
		}
	}
	return apply(f.text, edits), nil
}
