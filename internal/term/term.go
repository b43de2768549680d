// Package term is the one rule for text the commands print to a terminal
// that came from a peer or a file (a server's method names, errors and
// stderr, a record, a status file): control characters are shown escaped,
// so that such text can neither move the cursor, clear the screen, set the
// window title nor start a line of its own that forges a verdict.
package term

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line returns s for one line of a terminal: every rune that is not
// printable (C0 controls including newline and carriage return, DEL, C1
// controls, Unicode format characters such as bidirectional overrides) is
// shown as \xNN, \uNNNN or \n, \r, \t; a byte that is not UTF-8 as \xNN.
// Printable text, in any script, is kept as it is; so is a backslash, so
// the escaped form is for reading, not for decoding.
func Line(s string) string {
	if clean(s, false) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case printable(r, false):
			b.WriteString(s[i : i+n])
		default:
			b.WriteString(quoted(r))
		}
		i += n
	}
	return b.String()
}

// Block returns s for a block of lines: each line as Line gives it, the
// newlines between them kept (a tab too).
func Block(s string) string {
	if clean(s, true) {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = Line(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}

func clean(s string, block bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || !printable(r, block) {
			return false
		}
	}
	return true
}

func printable(r rune, block bool) bool {
	if block && (r == '\n' || r == '\t') {
		return true
	}
	return r == ' ' || unicode.IsGraphic(r) && !unicode.Is(unicode.Cf, r)
}

func quoted(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	if r < 0x100 {
		return fmt.Sprintf(`\x%02x`, r)
	}
	return fmt.Sprintf(`\u%04x`, r)
}
