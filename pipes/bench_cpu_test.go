//go:build unix

package pipes_test

import (
	"bytes"
	"io"
	"slices"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFramerCPU reports the process's CPU time (getrusage: user and
// system, of every thread: the writer's and the kernel's work on both ends of
// the pipe included) per frame, for the Framer and two anchors: read64k, and
// scan, which is read64k finding every newline with bytes.IndexByte as any
// framer must, and doing nothing else: the floor of framing. Run it with
// -cpu 1, interleaving an old and a new binary, to compare CPU per frame
// where wall-clock ratios are noisy:
//
//	go test -run '^$' -bench FramerCPU/pipe/200B -benchtime 10x -cpu 1 ./pipes
func BenchmarkFramerCPU(b *testing.B) {
	sources := []struct {
		name string
		src  source
	}{{"pipe", pipeSource}, {"memory", memorySource}}
	framer := consumers[slices.IndexFunc(consumers, func(c consumer) bool { return c.name == "framer" })]
	for _, src := range sources {
		for _, size := range benchFrames {
			s := newStream(size.n)
			for _, c := range []consumer{{"read64k", read64k}, {"scan", scan64k}, framer} {
				b.Run(src.name+"/"+size.name+"/"+c.name, func(b *testing.B) {
					b.SetBytes(int64(s.total))
					cpu0, passes := cpuTime(b), 0
					for b.Loop() {
						pass(b, src.src, s, c)
						passes++
					}
					frames := float64(passes * (s.total / s.frame))
					b.ReportMetric(float64(cpuTime(b)-cpu0)/frames, "CPU-ns/frame")
				})
			}
		}
	}
}

// cpuTime returns the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// scan64k is read64k that also finds every newline with bytes.IndexByte,
// and does nothing with them.
func scan64k(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var total int64
	for {
		n, err := r.Read(buf)
		total += int64(n)
		for c := buf[:n]; ; {
			i := bytes.IndexByte(c, '\n')
			if i < 0 {
				break
			}
			c = c[i+1:]
		}
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}
