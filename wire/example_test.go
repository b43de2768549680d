package wire_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpstdio/mcpstdio/wire"
)

func ExampleParseMessage() {
	m, err := wire.ParseMessage([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	id, _ := m.IntID()
	fmt.Println(m.IsRequest(), id, m.Method, string(wire.Member(m.Params, "name")))

	_, err = wire.ParseMessage([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"id":2}`))
	fmt.Println(errors.Is(err, wire.ErrDuplicateKey))
	// Output:
	// true 7 tools/call "search"
	// true
}

// A frame too large to parse still tells its id and method to a Scanner,
// which keeps only a few bytes of it.
func ExampleScanner() {
	s := wire.NewScanner(func(e wire.Envelope) {
		fmt.Printf("%d bytes, id %s, method %s\n", e.Size, e.ID, e.Method)
	})
	huge := `{"jsonrpc":"2.0","result":{"text":"` + strings.Repeat("x", 1<<20) + `"},"id":42}` + "\n"
	for i := 0; i < len(huge); i += 4096 { // as a pipe delivers it
		s.Write([]byte(huge[i:min(i+4096, len(huge))]))
	}
	// Output:
	// 1048622 bytes, id 42, method
}
