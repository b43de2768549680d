package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// validCases are inputs on which valid must agree with encoding/json.Valid:
// every rule of the grammar, on both sides of it.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` { } `, `[ ]`, `{"a":1}`, `{"a":1,}`, `{,}`, `[1,]`, `[,1]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{1:2}`,
	`"`, `""`, `"a`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\x"`, `"\u00e9"`, `"\u00G9"`, `"\u00e"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"",
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e-5`, `1e`, `1e+`, `-1.5e10`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `[true,false,null]`, `{"a":[{"b":null}]}`, `{"a":[}`, `[{]}`,
	`1 2`, `{} {}`, "{\n\t\"a\" :\r 1 }\n", `{"a":"b"}x`, `[[[[]]]]`, `[[[]]`, `]`, `}`, `{"a":{"b":{"c":"d"}}}`,
	strings.Repeat("[", maxNestingDepth) + strings.Repeat("]", maxNestingDepth),
	strings.Repeat("[", maxNestingDepth+1) + strings.Repeat("]", maxNestingDepth+1),
	strings.Repeat(`{"a":`, maxNestingDepth) + "1" + strings.Repeat("}", maxNestingDepth),
	strings.Repeat(`{"a":`, maxNestingDepth+1) + "1" + strings.Repeat("}", maxNestingDepth+1),
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%.60q) = %v, encoding/json.Valid says %v", c, got, want)
		}
	}
}

// TestValidStringEveryOffset puts each kind of byte a string treats
// specially (and its neighbours) at every offset of a string long enough
// to be crossed in several 8-byte words, with more special bytes after
// it: validString must stop at the first one, wherever it falls in a word.
func TestValidStringEveryOffset(t *testing.T) {
	for _, special := range []string{`"`, `\`, `\n`, `\u00e9`, `\x`, "\x00", "\x1f", " ", "\x21", "\x7f", "\x80", "\xff", `\"`, `\\`} {
		for off := range 24 {
			for _, after := range []string{``, `"`, `\"`, "\x01", `x"`} {
				in := `"` + strings.Repeat("a", off) + special + strings.Repeat("b", 17) + after + `"`
				if got, want := valid([]byte(in)), json.Valid([]byte(in)); got != want {
					t.Errorf("valid(%q) = %v, encoding/json.Valid says %v", in, got, want)
				}
				obj := `{"k":` + in + `,"z":1}`
				if got, want := valid([]byte(obj)), json.Valid([]byte(obj)); got != want {
					t.Errorf("valid(%q) = %v, encoding/json.Valid says %v", obj, got, want)
				}
			}
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := valid(b), json.Valid(b); got != want {
			t.Errorf("valid(%q) = %v, encoding/json.Valid says %v", b, got, want)
		}
	})
}

// TestParseManyMembers: an envelope past the members validTop records is
// walked instead, with the same result.
func TestParseManyMembers(t *testing.T) {
	frame := `{"a":1,"b":[2],"c":{"d":3},"e":"4","f":null,"g":true,"h":5,"i":6,"jsonrpc":"2.0","id":7,"result":{"x":"y"}}`
	var m members
	if !validTop([]byte(frame), &m) || !m.over {
		t.Fatalf("validTop: over = %v, want the 11 members past the %d recorded", m.over, len(m.s))
	}
	msg, err := ParseMessage([]byte(frame))
	if err != nil {
		t.Fatal(err)
	}
	if string(msg.ID) != "7" || string(msg.Result) != `{"x":"y"}` {
		t.Errorf("ParseMessage: id %s, result %s; want 7 and {\"x\":\"y\"}", msg.ID, msg.Result)
	}
	if _, err := ParseMessage([]byte(`{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"id":1,"id":2,"jsonrpc":"2.0","result":1}`)); !errors.Is(err, ErrDuplicateKey) {
		t.Errorf("duplicate id past the recorded members: err = %v, want ErrDuplicateKey", err)
	}
}
