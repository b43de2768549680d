package integration_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// rawServer is as cheap as a legacy MCP server can be: one goroutine, each
// answer prebuilt but for its id, so that a benchmark measures the client.
func rawServer(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	w := bufio.NewWriterSize(out, 64<<10)
	var resp []byte
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return nil
		}
		m, err := wire.ParseMessageInPlace(line)
		if err != nil || !m.IsRequest() {
			continue
		}
		resp = append(append(append(resp[:0], `{"jsonrpc":"2.0","id":`...), m.ID...), ',')
		switch m.Method {
		case wire.MethodInitialize:
			resp = append(resp, `"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}`...)
		case wire.MethodToolsCall:
			resp = append(resp, `"result":{"content":[{"type":"text","text":"hi"}]}}`...)
		default:
			resp = append(resp, `"error":{"code":-32601,"message":"method not found"}}`...)
		}
		w.Write(append(resp, '\n'))
		if r.Buffered() == 0 { // answer a burst in one write
			if err := w.Flush(); err != nil {
				return err
			}
		}
	}
}

// BenchmarkCallsInFlight: 1,000 concurrent tools/call against the same
// server, in-process on os.Pipes, from the mcptest host with its defaults
// and from the official Go SDK client (what a user would use instead);
// calls/s side by side in one run. The server is a raw one, as fast as a
// server can answer, so that the clients' costs show.
func BenchmarkCallsInFlight(b *testing.B) {
	const n = 1000
	run := func(b *testing.B, call func(ctx context.Context) error) {
		ctx := b.Context()
		for b.Loop() {
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := call(ctx); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
		}
		b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "calls/s")
	}
	args := map[string]any{"text": "hi"}
	b.Run("mcptest", func(b *testing.B) {
		s := mcptest.StartServer(b, mcptest.InProcess(rawServer))
		run(b, func(ctx context.Context) error { _, err := s.CallTool(ctx, "echo", args); return err })
	})
	b.Run("go-sdk-client", func(b *testing.B) {
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		ctx, cancel := context.WithCancel(b.Context())
		served := make(chan error, 1)
		go func() { served <- rawServer(ctx, inR, outW, nil); outW.Close() }()
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
		cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, func(ctx context.Context) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
			return err
		})
		cs.Close()
		cancel()
		<-served
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
	})
}
