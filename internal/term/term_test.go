package term

import (
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"tools/call search", "tools/call search"},
		{"héllo, 世界 ✓", "héllo, 世界 ✓"},
		{"\x1b]0;forged\a\x1b[2J", `\x1b]0;forged\x07\x1b[2J`},
		{"a\nPASS b\r\tc", `a\nPASS b\r\tc`},
		{"del\x7f c1\u009b2J", `del\x7f c1\x9b2J`},
		{"bidi\u202eevil\u200b", `bidi\u202eevil\u200b`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{`back\slash`, `back\slash`},
	} {
		if got := Line(c.in); got != c.want {
			t.Errorf("Line(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Block(c.in); control(got) {
			t.Errorf("Block(%q) = %q holds a control character", c.in, got)
		}
	}
	if got, want := Block("line 1\n\x1b[2Jline\t2\r"), "line 1\n\\x1b[2Jline\t2\\r"; got != want {
		t.Errorf("Block = %q, want %q", got, want)
	}
}

// FuzzLine: whatever the input, Line holds no control character and no
// newline, Block none but newlines and tabs, and both keep printable text.
func FuzzLine(f *testing.F) {
	f.Add("\x1b]0;x\a\r\n\u009b\u202e\xff")
	f.Fuzz(func(t *testing.T, s string) {
		l, b := Line(s), Block(s)
		if !utf8.ValidString(l) || control(l) || control(b) {
			t.Fatalf("Line(%q) = %q, Block = %q", s, l, b)
		}
		for _, r := range l {
			if r == '\n' || r == '\t' {
				t.Fatalf("Line(%q) = %q holds a newline or tab", s, l)
			}
		}
		if clean(s, false) && l != s {
			t.Fatalf("Line(%q) = %q changed printable text", s, l)
		}
	})
}

// control reports whether s holds a raw control character: a byte below
// 0x20 other than newline and tab, DEL, or a C1 control as a rune.
func control(s string) bool {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return true
		}
	}
	return false
}
