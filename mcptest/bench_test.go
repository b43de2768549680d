package mcptest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The benchmarks come in pairs: the host beside the anchor it is judged
// against, measured in the same run (go test -bench; see the README):
//
//	BenchmarkRoundTrip/host   vs BenchmarkRoundTrip/pingpong (two goroutines bouncing a line through os.Pipe)
//	BenchmarkIngest/host      vs BenchmarkIngest/framer-live (a bare pipes.Framer reading the same live flood from the same server)
//	                          and BenchmarkIngest/framer     (pipes.Framer + wire.ParseMessage over the same bytes in memory)

// floodBytes is n progress notifications of about 150 bytes, as a server
// reporting progress writes them.
func floodBytes(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":%d,"total":%d,"message":"step %d of the job"}}`+"\n", i, n, i)
	}
	return b.Bytes()
}

// rawServer answers every request with an empty result, written in one
// write; a request for "flood" gets the flood first. It is as cheap as a Go
// server can be, so that the host's cost shows.
func rawServer(flood []byte) mcptest.ServeFunc {
	return func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		r := bufio.NewReaderSize(in, 64<<10)
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
			if m.Method == "flood" {
				if _, err := out.Write(flood); err != nil {
					return err
				}
			}
			resp = append(append(append(resp[:0], `{"jsonrpc":"2.0","id":`...), m.ID...), `,"result":{}}`+"\n"...)
			if _, err := out.Write(resp); err != nil {
				return err
			}
		}
	}
}

// BenchmarkRoundTrip: a trivial call against an in-process raw server,
// beside the floor: a request line and a response line bounced between two
// goroutines through a pair of os.Pipes.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("host", func(b *testing.B) {
		s := mcptest.StartServer(b, mcptest.InProcess(rawServer(nil)), mcptest.WithoutHandshake())
		ctx := b.Context()
		for b.Loop() {
			if _, err := s.Call(ctx, wire.MethodPing, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pingpong", func(b *testing.B) {
		reqR, reqW, _ := os.Pipe()
		respR, respW, _ := os.Pipe()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the server: read a line, answer it
			defer wg.Done()
			defer respW.Close()
			r := bufio.NewReader(reqR)
			resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
			for {
				if _, err := r.ReadSlice('\n'); err != nil {
					return
				}
				if _, err := respW.Write(resp); err != nil {
					return
				}
			}
		}()
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		r := bufio.NewReader(respR)
		for b.Loop() {
			if _, err := reqW.Write(req); err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadSlice('\n'); err != nil {
				b.Fatal(err)
			}
		}
		reqW.Close()
		wg.Wait()
		reqR.Close()
		respR.Close()
	})
}

// BenchmarkIngest: 100,000 progress notifications (15 MB) written by an
// in-process server and taken in by the host, live through a real pipe,
// beside the anchor: a bare Framer + ParseMessage loop over the same bytes
// in memory.
func BenchmarkIngest(b *testing.B) {
	const n = 100_000
	flood := floodBytes(n)
	b.Run("host", func(b *testing.B) {
		s := mcptest.StartServer(b, mcptest.InProcess(rawServer(flood)), mcptest.WithoutHandshake())
		ctx := b.Context()
		b.SetBytes(int64(len(flood)))
		for b.Loop() {
			if _, err := s.Call(ctx, "flood", nil); err != nil {
				b.Fatal(err)
			}
		}
		if st := s.Stats(); st.Notifications%n != 0 {
			b.Fatalf("%d notifications counted, not a multiple of %d", st.Notifications, n)
		}
	})
	b.Run("framer-live", func(b *testing.B) {
		// The same server and flood on the same kind of pipes, read by a
		// bare Framer up to the response: the floor of live ingest.
		inR, inW, _ := os.Pipe()
		outR, outW, _ := os.Pipe()
		done := make(chan error, 1)
		go func() {
			err := rawServer(flood)(context.Background(), inR, outW, io.Discard)
			outW.Close()
			done <- err
		}()
		req := []byte(`{"jsonrpc":"2.0","id":1,"method":"flood"}` + "\n")
		resp := []byte(`{"jsonrpc":"2.0","id":`)
		f := pipes.NewFramer(outR, 16<<20)
		b.SetBytes(int64(len(flood)))
		for b.Loop() {
			if _, err := inW.Write(req); err != nil {
				b.Fatal(err)
			}
			for {
				frame, err := f.Next()
				if err != nil {
					b.Fatal(err)
				}
				if bytes.HasPrefix(frame, resp) {
					break
				}
			}
		}
		inW.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		inR.Close()
		outR.Close()
	})
	b.Run("framer", func(b *testing.B) {
		b.SetBytes(int64(len(flood)))
		for b.Loop() {
			f := pipes.NewFramer(bytes.NewReader(flood), 16<<20)
			for {
				frame, err := f.Next()
				if err != nil {
					break
				}
				if _, err := wire.ParseMessage(frame); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkCallsInFlight: 1,000 calls at once on one session with defaults,
// reported as calls per second (integration/ runs the official Go SDK
// client against the same server for comparison).
func BenchmarkCallsInFlight(b *testing.B) {
	s := mcptest.StartServer(b, mcptest.InProcess(rawServer(nil)), mcptest.WithoutHandshake())
	ctx := b.Context()
	const n = 1000
	for b.Loop() {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Call(ctx, wire.MethodPing, nil); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkCall measures a round-trip tools/call (echo) latency against the
// test server, in-process and as a child.
func BenchmarkCall(b *testing.B) {
	testkit.EachWayB(b, func(b *testing.B, child bool) {
		s := mcptest.StartServer(b, target(b, child))
		params := call("echo", map[string]any{"text": "hi"})
		ctx := b.Context()
		for b.Loop() {
			if _, err := s.Call(ctx, wire.MethodToolsCall, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStartHelper measures starting a Helper child up to a negotiated
// session (probe + initialize); ns/op includes Close, the start-ms-median
// metric does not.
func BenchmarkStartHelper(b *testing.B) {
	var starts []time.Duration
	ctx := b.Context()
	for b.Loop() {
		t0 := time.Now()
		s, err := mcptest.Start(ctx, target(b, true))
		if err != nil {
			b.Fatal(err)
		}
		starts = append(starts, time.Since(t0))
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(starts)
	b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "start-ms-median")
}

// BenchmarkReceive1MiB measures receiving 1 MiB responses.
func BenchmarkReceive1MiB(b *testing.B) {
	testkit.EachWayB(b, func(b *testing.B, child bool) {
		s := mcptest.StartServer(b, target(b, child))
		params := call("big", map[string]any{"size": 1 << 20})
		ctx := b.Context()
		b.SetBytes(1 << 20)
		for b.Loop() {
			if _, err := s.Call(ctx, wire.MethodToolsCall, params); err != nil {
				b.Fatal(err)
			}
		}
	})
}
