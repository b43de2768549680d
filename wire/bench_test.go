package wire_test

import (
	"fmt"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

// BenchmarkParseMessageInto parses the frames of a progress flood, as the
// host's reader does (mcptest's BenchmarkIngest), and a response carrying
// a larger result, reusing one Message.
func BenchmarkParseMessageInto(b *testing.B) {
	var flood [][]byte
	var total int64
	for i := range 1000 {
		f := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":%d,"message":"step %d of the job"}}`, i, 1000, i)
		flood = append(flood, f)
		total += int64(len(f))
	}
	resp := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"` + string(make100("lorem ipsum dolor sit amet, ")) + `"}],"isError":false,"structuredContent":{"n":12345,"ok":true,"list":[1,2,3,4.5e6,null]}}}`)
	b.Run("progress", func(b *testing.B) {
		var m wire.Message
		b.SetBytes(total)
		for b.Loop() {
			for _, f := range flood {
				if err := wire.ParseMessageInto(&m, f); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("response", func(b *testing.B) {
		var m wire.Message
		b.SetBytes(int64(len(resp)))
		for b.Loop() {
			if err := wire.ParseMessageInto(&m, resp); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func make100(s string) []byte {
	var out []byte
	for range 100 {
		out = append(out, s...)
	}
	return out
}
