// Package jsonstr follows JSON strings byte by byte, for the streaming
// walkers that look at JSON without decoding it (wire's Scanner, the
// proxy's redactor): the one rule for where a string ends.
package jsonstr

// End takes c, the next byte inside a JSON string whose escape state is
// *esc (a backslash was the byte before, unescaped), and reports whether c
// is the quote that ends the string. It updates *esc.
func End(esc *bool, c byte) bool {
	switch {
	case *esc:
		*esc = false
	case c == '\\':
		*esc = true
	case c == '"':
		return true
	}
	return false
}
