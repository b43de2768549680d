package jsonstr_test

import (
	"fmt"

	"github.com/mcpstdio/mcpstdio/internal/jsonstr"
)

// The bytes after a string's opening quote, up to the one that ends it:
// an escaped quote does not.
func ExampleEnd() {
	in := `a\"b\\"c`
	esc := false
	for i := range len(in) {
		if jsonstr.End(&esc, in[i]) {
			fmt.Printf("the string is %s; after it: %s\n", in[:i], in[i+1:])
			break
		}
	}
	// Output: the string is a\"b\\; after it: c
}
