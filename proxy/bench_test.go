package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("flood", floodServer)
	mcptest.RegisterHelper("pong", pongServer)
	mcptest.RegisterHelper("proxy", proxyProcess)
	mcptest.RegisterHelper("cat", catProcess)
	mcptest.RegisterHelper("sized", sizedServer)
}

// sizedServer answers every line on stdin with one line of SIZE bytes,
// newline included, in one write. Args: SIZE.
func sizedServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	size, _ := strconv.Atoi(mcptest.HelperArgs()[0])
	resp := bytes.Repeat([]byte("x"), size)
	copy(resp, `{"jsonrpc":"2.0","id":1,"result":{"text":"`)
	copy(resp[size-4:], `"}}`+"\n")
	return answerEach(stdin, stdout, resp)
}

// floodServer answers every line on stdin with COUNT lines of SIZE bytes
// each, newlines included (JSON-RPC responses), written as fast as the
// pipe takes them in writes of at most 1 MiB; with "once" it writes them
// at start and exits. Args: SIZE COUNT [once].
func floodServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	args := mcptest.HelperArgs()
	size, _ := strconv.Atoi(args[0])
	count, _ := strconv.Atoi(args[1])
	head := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`)
	tail := []byte(`"}]}}` + "\n")
	fill := bytes.Repeat([]byte("x"), 1<<20)
	flood := func() error {
		for range count {
			if _, err := stdout.Write(head); err != nil {
				return err
			}
			for n := size - len(head) - len(tail); n > 0; n -= len(fill) {
				if _, err := stdout.Write(fill[:min(n, len(fill))]); err != nil {
					return err
				}
			}
			if _, err := stdout.Write(tail); err != nil {
				return err
			}
		}
		return nil
	}
	if len(args) > 2 && args[2] == "once" {
		if err := flood(); err != nil {
			return err
		}
		return stdout.Close()
	}
	r := bufio.NewReader(stdin)
	for {
		if _, err := r.ReadSlice('\n'); err != nil {
			return nil
		}
		if err := flood(); err != nil {
			return err
		}
	}
}

// pongServer answers every line on stdin with one small response line.
func pongServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	return answerEach(stdin, stdout, []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"))
}

// answerEach writes resp, in one write, for every line read from stdin,
// until stdin ends.
func answerEach(stdin io.Reader, stdout io.Writer, resp []byte) error {
	r := bufio.NewReader(stdin)
	for {
		if _, err := r.ReadSlice('\n'); err != nil {
			return nil
		}
		if _, err := stdout.Write(resp); err != nil {
			return err
		}
	}
}

// proxyProcess is `mcpstdio proxy` in a child process: it proxies its own
// stdio to the helper named by its args, with the host's pipes in
// non-blocking mode and recording to the file named by $PROXY_LOG, as the
// command does (runProxy), forced onto the forwarding path
// $PROXY_FORWARDING names, if set.
func proxyProcess(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	args := mcptest.HelperArgs()
	if mode := os.Getenv("PROXY_FORWARDING"); mode != "" {
		defer proxy.SetForwarding(mode)()
	}
	return runProxy(ctx, mustHelper(ctx, args[0], args[1:]...), nonBlockingStdio(), os.Getenv("PROXY_LOG"))
}

// catProcess is the simplest relay, for comparison: io.Copy each way on
// the Go runtime's pollable pipes, observing nothing.
func catProcess(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	args := mcptest.HelperArgs()
	cmd := mustHelper(ctx, args[0], args[1:]...)
	cmd.Stderr = stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		io.CopyBuffer(in, stdin, make([]byte, 64<<10))
		in.Close()
	}()
	io.CopyBuffer(stdout, out, make([]byte, 64<<10))
	stdout.Close()
	return cmd.Wait()
}

// benchChild starts the helper server directly (relay "") or behind a
// relay process ("proxy" or "cat"), returning its stdin and stdout and a
// function that waits for it.
func benchChild(b testing.TB, relay string, server ...string) (io.WriteCloser, io.ReadCloser, func() *os.ProcessState) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	b.Cleanup(cancel)
	var cmd *exec.Cmd
	switch relay {
	case "":
		cmd = mustHelper(ctx, server[0], server[1:]...)
	default:
		cmd = mustHelper(ctx, relay, server...)
		cmd.Env = append(cmd.Env, "PROXY_LOG="+filepath.Join(b.TempDir(), "rec.ndjson"))
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return in, out, func() *os.ProcessState {
		in.Close()
		if err := cmd.Wait(); err != nil {
			b.Fatalf("%s: %v", cmd, err)
		}
		return cmd.ProcessState
	}
}

// modes are the ways a host reaches the server in the benchmarks: directly,
// through the simplest Go relay (the floor for any relay process), and
// through the proxy.
// With BENCH_PATHS=1 the proxy also runs forced onto each forwarding path
// ("proxy-copy", "proxy-splice"), to measure the rule of splice_linux.go.
var modes = func() []struct{ name, relay, forwarding string } {
	m := []struct{ name, relay, forwarding string }{{"direct", "", ""}, {"iocopy-relay", "cat", ""}, {"proxy", "proxy", ""}}
	if os.Getenv("BENCH_PATHS") == "1" {
		m = append(m, struct{ name, relay, forwarding string }{"proxy-copy", "proxy", "copy"}, struct{ name, relay, forwarding string }{"proxy-splice", "proxy", "splice"})
	}
	return m
}()

// BenchmarkThroughput: the host asks for 64 responses of 1 MiB and reads
// them with 64 KiB read(2) calls (the physical limit of the pipe), from the
// server directly and through a proxy process that records to a file, in
// one session per sub-benchmark (process starts are not counted).
func BenchmarkThroughput(b *testing.B) {
	const frame, count = 1 << 20, 64
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			b.Setenv("PROXY_FORWARDING", m.forwarding)
			in, out, wait := benchChild(b, m.relay, "flood", fmt.Sprint(frame), fmt.Sprint(count))
			b.SetBytes(frame * count)
			buf := make([]byte, 64<<10)
			for b.Loop() {
				if _, err := in.Write([]byte("go\n")); err != nil {
					b.Fatal(err)
				}
				for n := 0; n < frame*count; {
					k, err := out.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					n += k
				}
			}
			b.StopTimer()
			wait()
		})
	}
}

// BenchmarkRoundTrip: one small request line and its response line, the
// host writing and then reading, to a server that answers at once; the
// median round trip is reported (the mean hides the scheduler's tail).
func BenchmarkRoundTrip(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			b.Setenv("PROXY_FORWARDING", m.forwarding)
			roundTrips(b, m.relay, "pong")
		})
	}
}

// roundTrips times one small request line and its response line per
// iteration, the host writing and then reading, to the server (behind
// relay, if set), and reports the median round trip.
func roundTrips(b *testing.B, relay string, server ...string) {
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	in, out, wait := benchChild(b, relay, server...)
	r := bufio.NewReaderSize(out, 128<<10)
	var rtts []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := in.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(t0))
	}
	b.StopTimer()
	wait()
	slices.Sort(rtts)
	b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds())/1e3, "median-µs")
}

// BenchmarkHugeLine: 1 GiB through a proxy process as one line, beside the
// same 1 GiB in 1 MiB lines and a single 1 MiB line; the proxy keeps no
// more of a line than its chunks and copies, and reports its own peak
// resident memory (Linux VmHWM, which counts the pages of the binary it
// ran, and the most anonymous memory and file pages sampled).
func BenchmarkHugeLine(b *testing.B) {
	for _, c := range []struct{ size, count int }{{1 << 20, 1}, {1 << 20, 1024}, {1 << 30, 1}} {
		b.Run(fmt.Sprintf("%dx%dMiB", c.count, c.size>>20), func(b *testing.B) {
			size := c.size * c.count
			b.SetBytes(int64(size))
			buf := make([]byte, 64<<10)
			var hwm, anon, file int64
			for b.Loop() {
				hwmFile := filepath.Join(b.TempDir(), "hwm")
				b.Setenv("PROXY_HWM", hwmFile)
				_, out, wait := benchChild(b, "proxy", "flood", fmt.Sprint(c.size), fmt.Sprint(c.count), "once")
				n, _ := io.CopyBuffer(io.Discard, struct{ io.Reader }{out}, buf)
				wait()
				if n != int64(size) {
					b.Fatalf("read %d bytes, want %d", n, size)
				}
				if kb, err := os.ReadFile(hwmFile); err == nil {
					var v, a, f int64
					fmt.Sscan(string(kb), &v, &a, &f)
					hwm, anon, file = max(hwm, v<<10), max(anon, a<<10), max(file, f<<10)
				}
			}
			if hwm > 0 {
				b.ReportMetric(float64(hwm)/(1<<20), "proxy-VmHWM-MiB")
				b.ReportMetric(float64(anon)/(1<<20), "proxy-anon-MiB")
				b.ReportMetric(float64(file)/(1<<20), "proxy-file-MiB")
			}
		})
	}
}

// BenchmarkMCPHost: 1 MiB tools/call responses to mcptest's host (which
// frames and validates every response, as an MCP client does), from the
// fake server directly, through an io.Copy relay and through a proxy
// process, one session per sub-benchmark.
func BenchmarkMCPHost(b *testing.B) {
	for _, m := range modes {
		b.Run(m.name, func(b *testing.B) {
			b.Setenv("PROXY_FORWARDING", m.forwarding)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := mustHelper(ctx, "fake")
			if m.relay != "" {
				cmd = mustHelper(ctx, m.relay, "fake")
				cmd.Env = append(cmd.Env, "PROXY_LOG="+filepath.Join(b.TempDir(), "rec.ndjson"))
			}
			s, err := mcptest.Start(ctx, mcptest.Exec(cmd))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			b.SetBytes(1 << 20)
			for b.Loop() {
				if _, err := s.Call(ctx, "tools/call", bigCall(1<<20)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkChunkPaths measures the rule of splice_linux.go: a round trip
// whose response is one chunk of each size, through a proxy process forced
// onto each forwarding path, one after the other in the same run; the
// median round trip is reported.
func BenchmarkChunkPaths(b *testing.B) {
	for _, size := range []int{1 << 10, 4 << 10, 16 << 10, 32 << 10, 64 << 10} {
		for _, path := range []string{"copy", "splice"} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, path), func(b *testing.B) {
				b.Setenv("PROXY_FORWARDING", path)
				b.SetBytes(int64(size))
				roundTrips(b, "proxy", "sized", fmt.Sprint(size))
			})
		}
	}
}

// TestBenchHarness runs every server and relay of the benchmarks once, at a
// small size: the benchmarks' harness keeps working, and every helper this
// binary registers is used by a test.
func TestBenchHarness(t *testing.T) {
	t.Parallel()
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			in, out, wait := benchChild(t, m.relay, "pong")
			r := bufio.NewReader(out)
			if _, err := in.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := r.ReadSlice('\n'); err != nil || !bytes.Contains(line, []byte(`"result"`)) {
				t.Fatalf("pong through %q: %q, %v", m.relay, line, err)
			}
			wait()
			in, out, wait = benchChild(t, m.relay, "flood", "1024", "4")
			if _, err := in.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			if n, err := io.ReadFull(out, make([]byte, 4*1024)); err != nil {
				t.Fatalf("flood through %q: %d bytes, %v", m.relay, n, err)
			}
			wait()
			// A response of more than a chunk: through the proxy, a direction
			// in bulk.
			in, out, wait = benchChild(t, m.relay, "sized", "100000")
			if _, err := in.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReaderSize(out, 128<<10).ReadSlice('\n'); err != nil || len(line) != 100000 {
				t.Fatalf("sized through %q: %d bytes, %v", m.relay, len(line), err)
			}
			wait()
		})
	}
}
