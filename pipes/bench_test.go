package pipes_test

import (
	"errors"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// makeFrame returns a frame of size bytes, newline included.
func makeFrame(size int) []byte {
	frame := make([]byte, size)
	for i := range frame {
		frame[i] = 'a' + byte(i%26)
	}
	frame[size-1] = '\n'
	return frame
}

// benchPipe starts a writer goroutine that writes the chunks in turn, count
// times over, into a fresh os.Pipe, and returns the read end and a function
// that waits for the writer. The chunks are made by the caller, outside the
// measured loop, so that only the reading side's allocations are counted.
func benchPipe(b *testing.B, count int, chunks ...[]byte) (*os.File, func()) {
	b.Helper()
	p, err := pipes.New()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer p.W.Close()
		for range count {
			for _, c := range chunks {
				if _, err := p.W.Write(c); err != nil {
					return
				}
			}
		}
	}()
	return p.R, func() { p.R.Close(); <-done }
}

const benchTotal = 64 << 20 // bytes through the pipe per iteration

// BenchmarkFramer compares the Framer with the raw baseline, a plain io.Copy
// to io.Discard from the same kind of pipe, in the same run.
func BenchmarkFramer(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}} {
		frame := makeFrame(size.n)
		count := benchTotal / size.n
		b.Run("raw-io.Copy/"+size.name, func(b *testing.B) {
			b.SetBytes(benchTotal)
			for b.Loop() {
				r, stop := benchPipe(b, count, frame)
				if _, err := io.Copy(io.Discard, r); err != nil {
					b.Fatal(err)
				}
				stop()
			}
		})
		b.Run("framer/"+size.name, func(b *testing.B) {
			b.SetBytes(benchTotal)
			for b.Loop() {
				r, stop := benchPipe(b, count, frame)
				f := pipes.NewFramer(r, 2<<20)
				for {
					if _, err := f.Next(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
				stop()
			}
		})
	}
}

// BenchmarkFramerHugeLine sends one 1 GiB line through a Framer with a 1 MiB
// limit and reports the memory it cost: allocated bytes per op and the peak
// heap in use.
func BenchmarkFramerHugeLine(b *testing.B) {
	const size = 1 << 30
	b.ReportAllocs()
	b.SetBytes(size)
	chunk := makeFrame(1 << 20)
	chunk[len(chunk)-1] = 'z'
	last := makeFrame(1 << 20)
	var peak uint64
	for b.Loop() {
		r, stop := benchPipe(b, 1, repeat(chunk, size/len(chunk)-1, last)...)
		f := pipes.NewFramer(r, 1<<20)
		var ms runtime.MemStats
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, err := f.Next()
			var big *pipes.FrameTooLargeError
			if !errors.As(err, &big) || big.Size != size-1 {
				b.Errorf("Next() = %v, want a FrameTooLargeError of %d bytes", err, size-1)
			}
		}()
		// Sample the heap while the line streams through.
	sample:
		for {
			select {
			case <-done:
				break sample
			default:
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
				runtime.Gosched()
			}
		}
		stop()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
}

// repeat returns n references to c followed by last.
func repeat(c []byte, n int, last []byte) [][]byte {
	out := make([][]byte, 0, n+1)
	for range n {
		out = append(out, c)
	}
	return append(out, last)
}
