package mcptest_test

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// BenchmarkCall measures a round-trip tools/call (echo) latency.
func BenchmarkCall(b *testing.B) {
	for _, child := range []bool{false, true} {
		b.Run(map[bool]string{false: "inprocess", true: "child"}[child], func(b *testing.B) {
			s := mcptest.StartServer(b, target(child))
			params := call("echo", map[string]any{"text": "hi"})
			ctx := b.Context()
			for b.Loop() {
				if _, err := s.Call(ctx, wire.MethodToolsCall, params); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStartHelper measures starting a Helper child up to a negotiated
// session (probe + initialize); ns/op includes Close, the start-ms-median
// metric does not.
func BenchmarkStartHelper(b *testing.B) {
	var starts []time.Duration
	ctx := b.Context()
	for b.Loop() {
		t0 := time.Now()
		s, err := mcptest.Start(ctx, target(true))
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
	for _, child := range []bool{false, true} {
		b.Run(map[bool]string{false: "inprocess", true: "child"}[child], func(b *testing.B) {
			s := mcptest.StartServer(b, target(child))
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
}
