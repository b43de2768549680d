// Command benchratios prints every performance ratio docs/benchmarks.md quotes,
// each figure beside its anchor, from one command:
//
//	go run ./cmd/internal/benchratios            # 5 rounds
//	go run ./cmd/internal/benchratios -rounds 3 -only 'host|framer'
//	go run ./cmd/internal/benchratios -calm 1   # first wait for a load average below 1
//	go run ./cmd/internal/benchratios -busy 1   # with one core kept busy by a shell loop
//
// It builds the test binaries of the packages with benchmarks once (pipes,
// mcptest, proxy, this command's own relay anchors, and the nested
// integration module), then runs them round after round, each round one
// process per binary whose benchmarks measure a figure and its anchor in
// the same process, one after the other. A ratio is computed per round;
// the table gives its median over the rounds and its spread (lowest and
// highest round), with the machine it ran on: CPU model, cores, load
// average before and after. Absolute figures move with the machine and its
// load; a ratio of two things measured in the same round moves much less.
// Some rows are figures of their own, with no anchor: the proxy's peak
// resident memory while one 1 GiB line passes (VmHWM, with its anonymous
// part and file pages, of mcpstdio-proxy and of `mcpstdio proxy`, which it
// builds too, and of the proxy's benchmark process), the CPU time a relay
// process takes per GB, and the share of bytes whose detail the proxy's
// observer lost.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// A binary is one package's test binary and the benchmarks of it that a
// round runs.
type binary struct {
	name      string // as in -only
	module    string // directory of the module, relative to the root
	pkg       string // the package, as go test takes it from the module
	bench     string // -test.bench
	benchtime string // -test.benchtime
	path      string // built binary
}

var binaries = []*binary{
	{name: "framer", module: ".", pkg: "./pipes", bench: "^BenchmarkFramerRatios$/^pipe$", benchtime: "5x"},
	{name: "host", module: ".", pkg: "./mcptest", bench: "^Benchmark(RoundTrip|Ingest)$", benchtime: "0.5s"},
	{name: "inflight", module: "integration", pkg: ".", bench: "^BenchmarkCallsInFlight$", benchtime: "20x"},
	{name: "proxy", module: ".", pkg: "./proxy", bench: "^Benchmark(Throughput|RoundTrip|MCPHost|HugeLine|HugeLineCommand|HugeLineProxyCommand)$/^(direct|iocopy-relay|proxy|1x1024MiB)$", benchtime: "0.5s"},
	{name: "proxy-client", module: "integration", pkg: ".", bench: "^BenchmarkProxyToolsCall$", benchtime: "1s"},
	{name: "relay", module: ".", pkg: "./cmd/internal/benchratios", bench: "^BenchmarkRelay", benchtime: "0.5s"},
}

// results are one round's output of one binary: benchmark name (without
// the -GOMAXPROCS suffix) → unit → value.
type results map[string]map[string]float64

// A ratio is one line of the table.
type ratio struct {
	bin            string // the binary whose round it is computed from
	figure, anchor string
	target         string
	unit           string // "×" for a ratio, "µs" for a difference, "MiB", "ms" or "%" for a figure of its own
	value          func(r results) (float64, bool)
}

// over is a/b of one unit of two benchmarks.
func over(a, b, unit string) func(results) (float64, bool) {
	return func(r results) (float64, bool) {
		x, ok1 := r[a][unit]
		y, ok2 := r[b][unit]
		return x / y, ok1 && ok2 && y != 0
	}
}

// metric is a metric one benchmark reports itself (the Framer's ratios).
func metric(bench, unit string) func(results) (float64, bool) {
	return func(r results) (float64, bool) {
		x, ok := r[bench][unit]
		return x, ok
	}
}

// added is how much more a than b takes, in µs, of a µs metric.
func added(a, b, unit string) func(results) (float64, bool) {
	return func(r results) (float64, bool) {
		x, ok1 := r[a][unit]
		y, ok2 := r[b][unit]
		return x - y, ok1 && ok2
	}
}

// per is a/c of the amounts two relays add over direct d.
func per(a, c, d, unit string) func(results) (float64, bool) {
	return func(r results) (float64, bool) {
		x, ok1 := r[a][unit]
		y, ok2 := r[c][unit]
		z, ok3 := r[d][unit]
		return (x - z) / (y - z), ok1 && ok2 && ok3 && y != z
	}
}

var ratios = func() []ratio {
	var rs []ratio
	for _, size := range []string{"200B", "1KiB", "64KiB", "1MiB"} {
		b := "BenchmarkFramerRatios/pipe/" + size
		target := ""
		if size == "200B" || size == "1MiB" {
			target = "≥ 0.8×"
		}
		rs = append(rs,
			ratio{"framer", "Framer, " + size + " frames through a pipe", "64 KiB read(2) loop", target, "×", metric(b, "framer/read64k")},
			ratio{"framer", "Framer, " + size + " frames", "bufio.Reader.ReadSlice", "", "×", metric(b, "framer/bufio")},
			ratio{"framer", "Valve+Framer (the host's reader), " + size, "64 KiB read(2) loop", "", "×", metric(b, "valve+framer/read64k")})
	}
	return append(rs,
		ratio{"host", "host round trip, trivial call, in-process raw server (ns/op)", "pipe ping-pong of the same two lines", "≤ 3×", "×",
			over("BenchmarkRoundTrip/host", "BenchmarkRoundTrip/pingpong", "ns/op")},
		ratio{"host", "host ingest, 100,000 notifications live (MB/s)", "bare Framer on the same live flood", "", "×", // no target: no real server writes a tenth as fast (README)
			over("BenchmarkIngest/host", "BenchmarkIngest/framer-live", "MB/s")},
		ratio{"host", "host ingest, live (MB/s)", "Framer + ParseMessage, same bytes in memory", "", "×",
			over("BenchmarkIngest/host", "BenchmarkIngest/framer", "MB/s")},
		ratio{"inflight", "1,000 tools/call in flight, mcptest (calls/s)", "official Go SDK client, same raw server", "≥ 6×", "×",
			over("BenchmarkCallsInFlight/mcptest", "BenchmarkCallsInFlight/go-sdk-client", "calls/s")},
		ratio{"proxy", "proxy, 1 MiB responses, host reading raw (MB/s)", "direct", "", "×",
			over("BenchmarkThroughput/proxy", "BenchmarkThroughput/direct", "MB/s")},
		ratio{"proxy", "proxy, raw 1 MiB responses (MB/s)", "io.Copy relay", "", "×",
			over("BenchmarkThroughput/proxy", "BenchmarkThroughput/iocopy-relay", "MB/s")},
		ratio{"proxy", "io.Copy relay, raw 1 MiB responses (MB/s)", "direct", "", "×",
			over("BenchmarkThroughput/iocopy-relay", "BenchmarkThroughput/direct", "MB/s")},
		ratio{"proxy", "proxy, 1 MiB tools/call to mcptest's host (MB/s)", "direct", "", "×",
			over("BenchmarkMCPHost/proxy", "BenchmarkMCPHost/direct", "MB/s")},
		ratio{"proxy", "proxy, small round trip, added (median µs)", "direct", "", "µs",
			added("BenchmarkRoundTrip/proxy", "BenchmarkRoundTrip/direct", "median-µs")},
		ratio{"proxy", "proxy's added round trip", "io.Copy relay's added round trip", "", "×",
			per("BenchmarkRoundTrip/proxy", "BenchmarkRoundTrip/iocopy-relay", "BenchmarkRoundTrip/direct", "median-µs")},
		ratio{"proxy", "mcpstdio-proxy's peak resident memory, one 1 GiB line (VmHWM sampled, MiB)", "none (the command's own process)", "≤ 8 MiB", "MiB",
			metric("BenchmarkHugeLineProxyCommand/1x1024MiB", "cmd-VmHWM-MiB")},
		ratio{"proxy", "of which anonymous (most RssAnon sampled every 10ms, MiB)", "none", "", "MiB",
			metric("BenchmarkHugeLineProxyCommand/1x1024MiB", "cmd-anon-MiB")},
		ratio{"proxy", "and file pages (the mcpstdio-proxy binary's code and data; it is statically linked; most RssFile sampled, MiB)", "none", "", "MiB",
			metric("BenchmarkHugeLineProxyCommand/1x1024MiB", "cmd-file-MiB")},
		ratio{"proxy", "`mcpstdio proxy`'s peak resident memory, one 1 GiB line (VmHWM sampled, MiB)", "none (the command's own process)", "", "MiB",
			metric("BenchmarkHugeLineCommand/1x1024MiB", "cmd-VmHWM-MiB")},
		ratio{"proxy", "of which anonymous (most RssAnon sampled every 10ms, MiB)", "none", "", "MiB",
			metric("BenchmarkHugeLineCommand/1x1024MiB", "cmd-anon-MiB")},
		ratio{"proxy", "and file pages (the mcpstdio binary's code and data, and libc; most RssFile sampled, MiB)", "none", "", "MiB",
			metric("BenchmarkHugeLineCommand/1x1024MiB", "cmd-file-MiB")},
		ratio{"proxy", "the proxy's benchmark process's peak resident memory, one 1 GiB line (VmHWM, MiB)", "none (counts the test binary's own pages)", "", "MiB",
			metric("BenchmarkHugeLine/1x1024MiB", "proxy-VmHWM-MiB")},
		ratio{"proxy", "of which anonymous (heap, stacks; most RssAnon sampled every 10ms, MiB)", "none (VmHWM less the binary's own pages)", "", "MiB",
			metric("BenchmarkHugeLine/1x1024MiB", "proxy-anon-MiB")},
		ratio{"proxy", "and file pages (the test binary's own code and data; most RssFile sampled, MiB)", "none (a 2.5 MB hello-world Go binary has 1.5 MiB)", "", "MiB",
			metric("BenchmarkHugeLine/1x1024MiB", "proxy-file-MiB")},
		ratio{"proxy-client", "proxy, 1 MiB tools/call to a real client, the official Go SDK's (MB/s)", "direct", "≥ 0.95× (quiet)", "×",
			over("BenchmarkProxyToolsCall/proxy", "BenchmarkProxyToolsCall/direct", "MB/s")},
		ratio{"relay", "proxy, raw 1 MiB lines (MB/s)", "splice relay whose observer reads every byte once", "≥ 0.9×", "×",
			over("BenchmarkRelayThroughput/proxy", "BenchmarkRelayThroughput/splice-observed", "MB/s")},
		ratio{"relay", "proxy, raw 1 MiB lines (MB/s)", "splice relay", "", "×",
			over("BenchmarkRelayThroughput/proxy", "BenchmarkRelayThroughput/splice", "MB/s")},
		ratio{"relay", "splice relay whose observer reads every byte once, raw 1 MiB lines (MB/s)", "splice relay", "", "×",
			over("BenchmarkRelayThroughput/splice-observed", "BenchmarkRelayThroughput/splice", "MB/s")},
		ratio{"relay", "proxy, raw 1 MiB lines (MB/s)", "direct", "≥ 0.6× (2 cores)", "×",
			over("BenchmarkRelayThroughput/proxy", "BenchmarkRelayThroughput/direct", "MB/s")},
		ratio{"relay", "proxy's CPU per GB of raw 1 MiB lines", "splice relay's CPU per GB", "", "×",
			over("BenchmarkRelayThroughput/proxy", "BenchmarkRelayThroughput/splice", "relay-CPU-ms/GB")},
		ratio{"relay", "proxy's CPU per GB of raw 1 MiB lines (ms/GB)", "none (the proxy process's own)", "", "ms",
			metric("BenchmarkRelayThroughput/proxy", "relay-CPU-ms/GB")},
		ratio{"relay", "splice relay's CPU per GB (ms/GB)", "none (the relay process's own)", "", "ms",
			metric("BenchmarkRelayThroughput/splice", "relay-CPU-ms/GB")},
		ratio{"relay", "raw 1 MiB lines: bytes whose detail the proxy's observer lost (%)", "none (counted in the record)", "", "%",
			metric("BenchmarkRelayThroughput/proxy", "proxy-detail-lost-%")},
		ratio{"relay", "proxy's added round trip (median)", "read/write relay's added round trip", "≤ 1.5×", "×",
			per("BenchmarkRelayRoundTrip/proxy", "BenchmarkRelayRoundTrip/readwrite", "BenchmarkRelayRoundTrip/direct", "median-µs")},
		ratio{"relay", "proxy, small round trip, added (median µs)", "direct", "", "µs",
			added("BenchmarkRelayRoundTrip/proxy", "BenchmarkRelayRoundTrip/direct", "median-µs")},
		ratio{"relay", "proxy's CPU per small round trip", "read/write relay's CPU per round trip", "", "×",
			over("BenchmarkRelayRoundTrip/proxy", "BenchmarkRelayRoundTrip/readwrite", "relay-CPU-µs/op")},
		ratio{"relay", "read/write relay, raw 1 MiB lines (MB/s)", "direct", "", "×",
			over("BenchmarkRelayThroughput/readwrite", "BenchmarkRelayThroughput/direct", "MB/s")},
		ratio{"relay", "splice relay, raw 1 MiB lines (MB/s)", "direct", "", "×",
			over("BenchmarkRelayThroughput/splice", "BenchmarkRelayThroughput/direct", "MB/s")},
		ratio{"relay", "io.Copy relay, raw 1 MiB lines (MB/s)", "direct", "", "×",
			over("BenchmarkRelayThroughput/iocopy", "BenchmarkRelayThroughput/direct", "MB/s")},
		ratio{"relay", "read/write relay, small round trip, added (median µs)", "direct", "", "µs",
			added("BenchmarkRelayRoundTrip/readwrite", "BenchmarkRelayRoundTrip/direct", "median-µs")},
		ratio{"relay", "splice relay, small round trip, added (median µs)", "direct", "", "µs",
			added("BenchmarkRelayRoundTrip/splice", "BenchmarkRelayRoundTrip/direct", "median-µs")},
	)
}()

func main() {
	rounds := flag.Int("rounds", 5, "rounds of every benchmark")
	only := flag.String("only", "", "run only the binaries whose name matches this regexp (framer, host, inflight, proxy, proxy-client, relay)")
	calm := flag.Float64("calm", 0, "after building, wait (at most 10 minutes) until the 1-minute load average is below this, if it is set")
	busy := flag.Int("busy", 0, "keep this many cores busy for the rounds, each with a shell loop (sh -c 'while :; do :; done')")
	flag.Parse()
	root, err := moduleRoot()
	if err != nil {
		fail(err)
	}
	var sel []*binary
	re := regexp.MustCompile(*only)
	for _, b := range binaries {
		if re.MatchString(b.name) {
			sel = append(sel, b)
		}
	}
	tmp, err := os.MkdirTemp("", "benchratios")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(tmp)
	for _, b := range sel {
		b.path = filepath.Join(tmp, b.name+".test")
		if err := run(filepath.Join(root, b.module), nil, "go", "test", "-c", "-o", b.path, b.pkg); err != nil {
			fail(fmt.Errorf("building %s: %w", b.pkg, err))
		}
	}
	// The commands a user runs, for the proxy's memory as the user has it
	// (BenchmarkHugeLineProxyCommand, BenchmarkHugeLineCommand).
	for env, cmd := range map[string]string{"MCPSTDIO_PROXY_BIN": "mcpstdio-proxy", "MCPSTDIO_BIN": "mcpstdio"} {
		bin := filepath.Join(tmp, cmd)
		if err := run(root, nil, "go", "build", "-o", bin, "./cmd/"+cmd); err != nil {
			fail(fmt.Errorf("building cmd/%s: %w", cmd, err))
		}
		os.Setenv(env, bin)
	}
	if *calm > 0 {
		waitCalm(*calm, 10*time.Minute)
	}
	stopBusy := keepBusy(*busy)
	loadBefore := loadavg()
	start := time.Now()
	per := map[string][]float64{} // ratio index → value per round
	for r := range *rounds {
		fmt.Fprintf(os.Stderr, "round %d of %d\n", r+1, *rounds)
		for _, b := range sel {
			out, err := runBinary(root, b)
			if err != nil {
				fail(fmt.Errorf("%s, round %d: %w\n%s", b.pkg, r+1, err, out))
			}
			res := parse(out)
			for i, rt := range ratios {
				if rt.bin != b.name {
					continue
				}
				if v, ok := rt.value(res); ok {
					per[fmt.Sprint(i)] = append(per[fmt.Sprint(i)], v)
				}
			}
		}
	}
	loadAfter := loadavg()
	stopBusy()
	busyNote := ""
	if *busy > 0 {
		busyNote = fmt.Sprintf(", with %d core(s) kept busy by a shell loop (-busy %d)", *busy, *busy)
	}
	fmt.Printf("Machine: %s, %d cores, %s/%s, %s; load average %s before, %s after; %d rounds in %v, %s%s.\n\n",
		cpuModel(), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH, runtime.Version(), loadBefore, loadAfter, *rounds,
		time.Since(start).Round(time.Second), start.UTC().Format("2006-01-02 15:04 UTC"), busyNote)
	fmt.Println("| figure | anchor, same round | ratio (median) | spread over rounds | target |")
	fmt.Println("|---|---|---|---|---|")
	for i, rt := range ratios {
		vs := per[fmt.Sprint(i)]
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		fmt.Printf("| %s | %s | %s | %s–%s | %s |\n", rt.figure, rt.anchor, format(median(vs), rt.unit), format(vs[0], rt.unit), format(vs[len(vs)-1], rt.unit), rt.target)
	}
}

func format(v float64, unit string) string {
	switch unit {
	case "µs":
		return fmt.Sprintf("%+.1f µs", v)
	case "MiB":
		return fmt.Sprintf("%.1f MiB", v)
	case "ms":
		return fmt.Sprintf("%.0f ms", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// runBinary runs one round of b in its package's directory.
func runBinary(root string, b *binary) (string, error) {
	dir := filepath.Join(root, b.module, b.pkg)
	cmd := exec.Command(b.path, "-test.run", "^$", "-test.bench", b.bench, "-test.benchtime", b.benchtime, "-test.timeout", "20m")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// benchLine is a benchmark result: name-N, iterations, then value unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

func parse(out string) results {
	res := results{}
	for line := range strings.Lines(out) {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		f := strings.Fields(m[2])
		vals := map[string]float64{}
		for i := 0; i+1 < len(f); i += 2 {
			var v float64
			if _, err := fmt.Sscan(f[i], &v); err == nil {
				vals[f[i+1]] = v
			}
		}
		res[m[1]] = vals
	}
	return res
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// moduleRoot is the main module's directory, where go.mod is.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("benchratios: run it inside the mcpstdio module")
	}
	return filepath.Dir(mod), nil
}

func cpuModel() string {
	if m := proc.CPUModel(); m != "" {
		return m
	}
	return "CPU unknown (" + runtime.GOOS + ")"
}

// waitCalm waits until the 1-minute load average is below limit, or for
// at most bound, and says on stderr how long it waited and what it saw: the
// builds before the rounds, or another job, raise it.
func waitCalm(limit float64, bound time.Duration) {
	start := time.Now()
	for {
		l := load1()
		if l < limit || time.Since(start) >= bound {
			fmt.Fprintf(os.Stderr, "benchratios: load average %.2f after waiting %v for it to be below %.2f\n", l, time.Since(start).Round(time.Second), limit)
			return
		}
		time.Sleep(5 * time.Second) // the kernel updates it every 5 s
	}
}

// load1 is the 1-minute load average (a large number if it is unknown).
func load1() float64 {
	l, err := proc.LoadAverage()
	if err != nil {
		return 1e9
	}
	return l[0]
}

// loadavg is the 1-, 5- and 15-minute load averages, as /proc/loadavg
// writes them, or "unknown".
func loadavg() string {
	l, err := proc.LoadAverage()
	if err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2])
}

// keepBusy starts n shell loops, each keeping a core busy, and returns
// what ends them and waits for them. fail ends them too.
func keepBusy(n int) (stop func()) {
	stop = func() {
		for _, c := range loops {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		loops = nil
	}
	for range n {
		c := exec.Command("sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			fail(fmt.Errorf("starting a busy loop: %w", err))
		}
		loops = append(loops, c)
	}
	atFail = stop
	return stop
}

// loops are the loops keepBusy started; busyCmds returns them (tests).
var loops []*exec.Cmd

func busyCmds() []*exec.Cmd { return loops }

// atFail is run by fail before it exits.
var atFail = func() {}

func fail(err error) {
	atFail()
	fmt.Fprintln(os.Stderr, "benchratios:", err)
	os.Exit(1)
}
