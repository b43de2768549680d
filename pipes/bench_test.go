package pipes_test

import (
	"bufio"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

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
	return startPipeWriter(b, func(w io.Writer) error {
		for range count {
			for _, c := range chunks {
				if _, err := w.Write(c); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// startPipeWriter runs write on the write end of a fresh os.Pipe in another
// goroutine, then closes that end. It returns the read end and a function
// that closes it and waits for the writer.
func startPipeWriter(b *testing.B, write func(io.Writer) error) (*os.File, func()) {
	b.Helper()
	p, err := pipes.New()
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer p.W.Close()
		_ = write(p.W) // an error means the reader closed: the pass has failed or ended
	}()
	return p.R, func() { p.R.Close(); <-done }
}

const benchTotal = 64 << 20 // bytes through the pipe per measured pass

// writeSize is the size of the benchmark writer's writes: a default Linux
// pipe's capacity, so that the writer is never the bottleneck and frames
// straddle writes at arbitrary offsets.
const writeSize = 64 << 10

// stream is a run of frames of one size, written into a pipe in writeSize
// pieces that ignore frame boundaries.
type stream struct {
	frame int    // frame size, newline included
	total int    // bytes per pass: a whole number of frames, about benchTotal
	tape  []byte // frames back to back, at least frame+writeSize bytes
}

func newStream(frame int) stream {
	n := (writeSize + frame - 1) / frame
	tape := make([]byte, 0, (n+1)*frame)
	for range n + 1 {
		tape = append(tape, makeFrame(frame)...)
	}
	return stream{frame: frame, total: benchTotal / frame * frame, tape: tape}
}

// open starts the writer on a fresh pipe and returns its read end and a
// function that closes it and waits for the writer.
func (s stream) open(b *testing.B) (*os.File, func()) {
	b.Helper()
	return startPipeWriter(b, func(w io.Writer) error {
		off := 0
		for left := s.total; left > 0; {
			piece := s.tape[off : off+min(writeSize, left)]
			if _, err := w.Write(piece); err != nil {
				return err
			}
			left -= len(piece)
			off = (off + len(piece)) % s.frame
		}
		return nil
	})
}

// consumer reads one pass of a stream from r and returns the bytes it
// consumed, frames and terminators included.
type consumer struct {
	name string
	read func(r io.Reader) (int64, error)
}

// consumers are the anchors and the code measured against them, on the same
// pipe in the same run.
var consumers = []consumer{
	{"read64k", read64k},
	{"bufio", func(r io.Reader) (int64, error) {
		// What a Go program would write instead: bufio.Reader.ReadSlice with
		// the same 64 KiB buffer, no limit and no accounting.
		br := bufio.NewReaderSize(r, 64<<10)
		var total int64
		for {
			line, err := br.ReadSlice('\n')
			total += int64(len(line))
			switch {
			case err == io.EOF:
				return total, nil
			case err != nil && err != bufio.ErrBufferFull:
				return total, err
			}
		}
	}},
	{"framer", func(r io.Reader) (int64, error) {
		return frameAll(pipes.NewFramer(r, 2<<20))
	}},
	{"valve", func(r io.Reader) (int64, error) {
		// The Valve alone, read as read64k reads.
		return read64k(pipes.NewValve(r))
	}},
	{"valve+framer", func(r io.Reader) (int64, error) {
		// How mcptest reads a server's stdout.
		return frameAll(pipes.NewFramer(pipes.NewValve(r), 2<<20))
	}},
}

// read64k is the physical limit: read(2) of a whole default pipe at a time,
// no framing.
func read64k(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// frameAll reads frames until the end and returns the bytes they took.
func frameAll(f *pipes.Framer) (int64, error) {
	for {
		if _, err := f.Next(); err != nil {
			s := f.Stats()
			if err == io.EOF {
				err = nil
			}
			return s.FrameBytes + s.Terminators, err
		}
	}
}

var benchFrames = []struct {
	name string
	n    int
}{{"200B", 200}, {"1KiB", 1 << 10}, {"64KiB", 64 << 10}, {"1MiB", 1 << 20}}

// source gives one pass of a stream to read, and a function to call after.
type source func(b *testing.B, s stream) (io.Reader, func())

// pipeSource writes the stream into a fresh os.Pipe from another goroutine.
func pipeSource(b *testing.B, s stream) (io.Reader, func()) { return s.open(b) }

// memorySource serves the stream from memory in writeSize reads, without
// system calls: it isolates the consumer's own CPU cost.
func memorySource(_ *testing.B, s stream) (io.Reader, func()) {
	return &tapeReader{s: s, left: s.total}, func() {}
}

// tapeReader reads a stream's bytes from its tape.
type tapeReader struct {
	s         stream
	off, left int
}

func (t *tapeReader) Read(p []byte) (int, error) {
	if t.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), writeSize, t.left)
	copy(p, t.s.tape[t.off:t.off+n])
	t.left -= n
	t.off = (t.off + n) % t.s.frame
	return n, nil
}

// pass gives one pass of s from src to c and returns how long it took.
func pass(b *testing.B, src source, s stream, c consumer) time.Duration {
	b.Helper()
	r, stop := src(b, s)
	defer stop()
	start := time.Now()
	n, err := c.read(r)
	d := time.Since(start)
	if err != nil || n != int64(s.total) {
		b.Fatalf("%s: consumed %d bytes, %v; want %d", c.name, n, err, s.total)
	}
	return d
}

// BenchmarkFramer measures each consumer alone, for profiles and benchstat.
// For the README's ratios, see BenchmarkFramerRatios.
func BenchmarkFramer(b *testing.B) {
	for _, size := range benchFrames {
		s := newStream(size.n)
		for _, c := range consumers {
			b.Run(size.name+"/"+c.name, func(b *testing.B) {
				b.SetBytes(int64(s.total))
				for b.Loop() {
					pass(b, pipeSource, s, c)
				}
			})
		}
	}
}

// BenchmarkFramerRatios measures every consumer in each iteration, in an
// order that rotates from one iteration to the next, and reports for each
// frame size the median throughput of each consumer (MB/s-<name>) and the
// median over iterations of the ratios of consumers measured side by side
// (<a>/<b>). Its ns/op is the time of one whole round and means little.
//
//	go test -run '^$' -bench FramerRatios -benchtime 15x -count 5 ./pipes
//
// The pipe variant is what the README quotes; the memory variant reads the
// same bytes with no system calls, to show each consumer's own CPU cost.
func BenchmarkFramerRatios(b *testing.B) {
	b.Run("pipe", func(b *testing.B) { ratios(b, pipeSource) })
	b.Run("memory", func(b *testing.B) { ratios(b, memorySource) })
}

func ratios(b *testing.B, src source) {
	b.Helper()
	pairs := [][2]string{
		{"framer", "read64k"}, {"framer", "bufio"}, {"bufio", "read64k"},
		{"valve", "read64k"}, {"valve+framer", "framer"}, {"valve+framer", "read64k"},
	}
	for _, size := range benchFrames {
		s := newStream(size.n)
		b.Run(size.name, func(b *testing.B) {
			times := map[string][]time.Duration{}
			round := 0
			for b.Loop() {
				for i := range consumers {
					c := consumers[(i+round)%len(consumers)]
					times[c.name] = append(times[c.name], pass(b, src, s, c))
				}
				round++
			}
			mbs := func(d time.Duration) float64 { return float64(s.total) / d.Seconds() / 1e6 }
			for _, c := range consumers {
				b.ReportMetric(median(times[c.name], mbs), "MB/s-"+c.name)
			}
			for _, r := range pairs {
				var each []float64
				for i := range times[r[0]] {
					each = append(each, times[r[1]][i].Seconds()/times[r[0]][i].Seconds())
				}
				b.ReportMetric(median(each, func(x float64) float64 { return x }), r[0]+"/"+r[1])
			}
		})
	}
}

// median returns the median of f over xs.
func median[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
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
