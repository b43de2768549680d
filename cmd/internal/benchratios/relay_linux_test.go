package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
)

// The relay anchors the README's proxy figures are read against, which
// proxy/bench_test.go does not have (it has direct and an io.Copy relay):
// a blocking read(2)/write(2) relay, a splice(2) relay and a splice relay
// whose observer reads every byte once (tee(2) into a pipe of its own,
// read with 64 KiB read(2)s, the traffic waiting for it when it is
// behind: the least a recording proxy must do), each a process between the
// host and a server, beside direct, an io.Copy relay and the proxy itself
// (the code of mcpstdio-proxy, recording to a file) in the same run, one
// after the other. Linux only: splice is.

func init() {
	mcptest.RegisterHelper("flood", flood)
	mcptest.RegisterHelper("pong", pong)
	mcptest.RegisterHelper("iocopy", relay(copyIO, false))
	mcptest.RegisterHelper("readwrite", relay(copyReadWrite, true))
	mcptest.RegisterHelper("splice", relay(copySplice, true))
	mcptest.RegisterHelper("splice-observed", relay(copySpliceObserved, true))
	mcptest.RegisterHelper("proxy", proxyRelay)
}

// TestMain serves the relay helpers; mcptest.Main runs goleak.VerifyTestMain.
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }

// relays are the ways between host and server; "" is direct.
var relays = []string{"direct", "iocopy", "readwrite", "splice", "splice-observed", "proxy"}

// flood answers every line on stdin with COUNT lines of SIZE bytes,
// newlines included, in writes of at most 1 MiB: JSON-RPC responses with
// one text block, as proxy's BenchmarkThroughput floods (relays do not
// look; the proxy's observer does). Args: SIZE COUNT.
func flood(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
	args := mcptest.HelperArgs()
	size, _ := strconv.Atoi(args[0])
	count, _ := strconv.Atoi(args[1])
	line := floodLine(size)
	r := bufio.NewReader(stdin)
	for {
		if _, err := r.ReadSlice('\n'); err != nil {
			return nil
		}
		for range count {
			for b := line; len(b) > 0; b = b[min(len(b), 1<<20):] {
				if _, err := stdout.Write(b[:min(len(b), 1<<20)]); err != nil {
					return err
				}
			}
		}
	}
}

// floodLine is one response line of size bytes, its newline included.
func floodLine(size int) []byte {
	head := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"`
	tail := `"}]}}` + "\n"
	line := bytes.Repeat([]byte("x"), size)
	copy(line, head)
	copy(line[size-len(tail):], tail)
	return line
}

// pong answers every line with one small response line.
func pong(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
	r := bufio.NewReader(stdin)
	resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	for {
		if _, err := r.ReadSlice('\n'); err != nil {
			return nil
		}
		if _, err := stdout.Write(resp); err != nil {
			return err
		}
	}
}

// pipe returns a pipe, blocking (for the read/write and splice relays,
// which make their own system calls) or on the runtime's poller (for
// io.Copy, as a Go program has it).
func pipe(blocking bool) (r, w *os.File, err error) {
	if !blocking {
		return os.Pipe()
	}
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(p[0]), "pipe"), os.NewFile(uintptr(p[1]), "pipe"), nil
}

// relay returns a helper that starts the server its args name as its own
// child and relays its stdin to the server and the
// server's stdout to its own with copy, one goroutine each way.
func relay(copy func(dst, src *os.File) error, blocking bool) mcptest.ServeFunc {
	return func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		args := mcptest.HelperArgs()
		cmd, err := mcptest.HelperCommand(ctx, args[0], args[1:]...)
		if err != nil {
			return err
		}
		inR, inW, err := pipe(blocking)
		if err != nil {
			return err
		}
		outR, outW, err := pipe(blocking)
		if err != nil {
			return err
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		inR.Close()
		outW.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // host → server; the server's stdin closes with ours
			defer wg.Done()
			_ = copy(inW, os.Stdin)
			inW.Close()
		}()
		err = copy(os.Stdout, outR)
		wg.Wait()
		outR.Close()
		return errors.Join(err, cmd.Wait())
	}
}

// proxyRelay is mcpstdio-proxy, the command's own code (proxycmd.Run),
// between its own stdio and the server its args name, recording to a file
// and keeping its status file in a temporary state directory. When
// $PROXY_METRICS names a file, it writes there what the record's summary
// says of the observer: "DroppedBytes StdinBytes StdoutBytes StderrBytes".
func proxyRelay(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
	args := mcptest.HelperArgs()
	cmd, err := mcptest.HelperCommand(ctx, args[0], args[1:]...)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchratios-proxy")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The server is the helper cmd names: the proxy's child inherits this
	// process's environment, which must name it.
	for _, kv := range append(cmd.Env, state.EnvStateDir+"="+dir) {
		if k, v, ok := strings.Cut(kv, "="); ok {
			os.Setenv(k, v)
		}
	}
	log := filepath.Join(dir, "rec.ndjson")
	argv := append([]string{"-log", log, "--", cmd.Path}, cmd.Args[1:]...)
	if code := proxycmd.Run(ctx, "mcpstdio-proxy", argv, os.Stdin, os.Stdout, os.Stderr); code != 0 {
		return fmt.Errorf("mcpstdio-proxy exited with status %d", code)
	}
	path := os.Getenv("PROXY_METRICS")
	if path == "" {
		return nil
	}
	f, err := os.Open(log)
	if err != nil {
		return err
	}
	defer f.Close()
	var m *record.Metrics
	if err := record.Read(f, func(e record.Event) error {
		if e.Metrics != nil {
			m = e.Metrics
		}
		return nil
	}); err != nil {
		return err
	}
	if m == nil {
		return errors.New("the record has no summary")
	}
	return os.WriteFile(path, fmt.Appendf(nil, "%d %d %d %d", m.DroppedBytes, m.StdinBytes, m.StdoutBytes, m.StderrBytes), 0o600)
}

func copyIO(dst, src *os.File) error {
	_, err := io.Copy(dst, src)
	return err
}

// copyReadWrite is a blocking read(2)/write(2) loop with a 64 KiB buffer.
func copyReadWrite(dst, src *os.File) error {
	d, s, err := blockingFDs(dst, src)
	if err != nil {
		return err
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(s, buf)
		if n <= 0 || err != nil {
			return ignoreEOF(err)
		}
		for b := buf[:n]; len(b) > 0; {
			k, err := syscall.Write(d, b)
			if err != nil {
				return err
			}
			b = b[k:]
		}
	}
}

// copySplice moves pipe to pipe in the kernel, up to 1 MiB a call.
func copySplice(dst, src *os.File) error {
	d, s, err := blockingFDs(dst, src)
	if err != nil {
		return err
	}
	for {
		n, err := syscall.Splice(s, nil, d, nil, 1<<20, 0x1 /* SPLICE_F_MOVE */)
		if n <= 0 || err != nil {
			return ignoreEOF(err)
		}
	}
}

// copySpliceObserved is copySplice with an observer that reads every byte
// once: each chunk is teed into the observer's pipe (1 MiB where the
// system allows it, as the proxy's) before it is spliced on, and a
// goroutine reads that pipe with 64 KiB read(2)s. A tee waits while the
// observer's pipe is full: nothing passes unread.
func copySpliceObserved(dst, src *os.File) error {
	d, s, err := blockingFDs(dst, src)
	if err != nil {
		return err
	}
	obsR, obsW, err := pipe(true)
	if err != nil {
		return err
	}
	defer obsR.Close()
	const fSetPipeSz = 1031 // F_SETPIPE_SZ
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, obsW.Fd(), fSetPipeSz, 1<<20)
	read := make(chan int64, 1)
	go func() {
		var total int64
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(int(obsR.Fd()), buf)
			if n <= 0 || err != nil {
				break
			}
			total += int64(n)
		}
		read <- total
	}()
	var teed int64
	for err == nil {
		var n int64
		if n, err = syscall.Tee(s, int(obsW.Fd()), 1<<20, 0); n <= 0 {
			break
		}
		teed += n
		for left := n; left > 0 && err == nil; {
			var k int64
			if k, err = syscall.Splice(s, nil, d, nil, int(left), 0x1 /* SPLICE_F_MOVE */); k <= 0 && err == nil {
				err = io.ErrUnexpectedEOF
			}
			left -= k
		}
	}
	obsW.Close()
	if got := <-read; got != teed && err == nil {
		err = fmt.Errorf("observer read %d of %d bytes teed", got, teed)
	}
	return ignoreEOF(err)
}

// blockingFDs returns the descriptors of dst and src in blocking mode: a
// standard stream inherited from a Go parent may be non-blocking.
func blockingFDs(dst, src *os.File) (int, int, error) {
	d, s := int(dst.Fd()), int(src.Fd())
	return d, s, errors.Join(syscall.SetNonblock(d, false), syscall.SetNonblock(s, false))
}

func ignoreEOF(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}

// start runs the server (SERVER ARGS...) directly or behind the relay, and
// returns its stdin and stdout, a function that ends it, and the process
// id of the relay (of the server, direct).
func start(tb testing.TB, relay string, server ...string) (io.WriteCloser, io.Reader, func(), int) {
	tb.Helper()
	args := server
	name := server[0]
	if relay != "direct" {
		name, args = relay, server
	} else {
		args = server[1:]
	}
	cmd, err := mcptest.HelperCommand(context.Background(), name, args...)
	if err != nil {
		tb.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	return in, out, func() {
		in.Close()
		_, _ = io.Copy(io.Discard, out)
		if err := cmd.Wait(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				tb.Error(err)
			}
		}
	}, cmd.Process.Pid
}

// cpuTime is the CPU time process pid has used so far, all its threads
// (schedstat, in ns), not its children's.
func cpuTime(pid int) time.Duration {
	tids, _ := proc.Threads(pid)
	var sum time.Duration
	for _, tid := range tids {
		if run, _, ok := proc.Schedstat(pid, tid); ok {
			sum += run
		}
	}
	return sum
}

// BenchmarkRelayThroughput: 64 lines of 1 MiB per request, read by the
// host with 64 KiB reads, as proxy's BenchmarkThroughput does. A relay
// reports the CPU time it used per GB forwarded (relay-CPU-ms/GB), which
// moves less with the machine's load than MB/s; the proxy, the share of
// the bytes its observer lost the detail of (proxy-detail-lost-%).
func BenchmarkRelayThroughput(b *testing.B) {
	const size, count = 1 << 20, 64
	for _, r := range relays {
		b.Run(r, func(b *testing.B) {
			metrics := filepath.Join(b.TempDir(), "metrics")
			b.Setenv("PROXY_METRICS", metrics)
			in, out, end, pid := start(b, r, "flood", fmt.Sprint(size), fmt.Sprint(count))
			ended := false
			defer func() {
				if !ended {
					end()
				}
			}()
			buf := make([]byte, 64<<10)
			b.SetBytes(size * count)
			// CPU is counted from the end of the first request: the
			// process's start is not forwarding.
			var cpu0 time.Duration
			loops := 0
			for b.Loop() {
				if loops++; loops == 2 {
					cpu0 = cpuTime(pid)
				}
				if _, err := in.Write([]byte("go\n")); err != nil {
					b.Fatal(err)
				}
				for n := 0; n < size*count; {
					k, err := out.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					n += k
				}
			}
			if r != "direct" && loops > 2 {
				gb := float64((loops-2)*size*count) / 1e9
				b.ReportMetric(float64(cpuTime(pid)-cpu0)/1e6/gb, "relay-CPU-ms/GB")
			}
			end()
			ended = true
			var dropped, in0, out0, err0 int64
			if m, err := os.ReadFile(metrics); err == nil {
				if _, err := fmt.Sscan(string(m), &dropped, &in0, &out0, &err0); err == nil && out0 > 0 {
					b.ReportMetric(100*float64(dropped)/float64(in0+out0+err0), "proxy-detail-lost-%")
				}
			}
		})
	}
}

// BenchmarkRelayRoundTrip: one small request and its response; the median
// round trip is reported, as proxy's BenchmarkRoundTrip does, and a
// relay's CPU time per round trip (relay-CPU-µs/op).
func BenchmarkRelayRoundTrip(b *testing.B) {
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	for _, r := range relays {
		b.Run(r, func(b *testing.B) {
			in, out, end, pid := start(b, r, "pong")
			defer end()
			br := bufio.NewReader(out)
			var rtts []time.Duration
			var cpu0 time.Duration
			for b.Loop() {
				if len(rtts) == 1 {
					cpu0 = cpuTime(pid)
				}
				t0 := time.Now()
				if _, err := in.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := br.ReadSlice('\n'); err != nil {
					b.Fatal(err)
				}
				rtts = append(rtts, time.Since(t0))
			}
			if r != "direct" && len(rtts) > 1 {
				b.ReportMetric(float64((cpuTime(pid)-cpu0).Nanoseconds())/1e3/float64(len(rtts)-1), "relay-CPU-µs/op")
			}
			slices.Sort(rtts)
			b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds())/1e3, "median-µs")
		})
	}
}

// TestRelays: every relay carries a flood byte for byte and a round trip.
func TestRelays(t *testing.T) {
	for _, r := range relays {
		t.Run(r, func(t *testing.T) {
			in, out, end, _ := start(t, r, "flood", "1000", "70")
			if _, err := in.Write([]byte("go\n")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 70*1000)
			if _, err := io.ReadFull(out, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.Repeat(floodLine(1000), 70)) {
				t.Errorf("%s relay: the flood arrived changed", r)
			}
			end()
			in, out, end, _ = start(t, r, "pong")
			defer end()
			if _, err := in.Write([]byte("ping\n")); err != nil {
				t.Fatal(err)
			}
			if l, err := bufio.NewReader(out).ReadSlice('\n'); err != nil || !bytes.Contains(l, []byte(`"result"`)) {
				t.Errorf("%s relay: round trip %q, %v", r, l, err)
			}
		})
	}
}
