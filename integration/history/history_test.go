package history_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// A release is one pinned SDK release on one side, and how the criteria
// run against it.
type release struct {
	sdk     string // go-sdk, mcp-go or ts-sdk
	version string
	side    string // server or client
	// pkg is the TypeScript package of a ts-sdk release other than
	// @modelcontextprotocol/sdk: @modelcontextprotocol/server, the 2.x
	// line's server (pinned in ts/server-VERSION, served by server2.mjs).
	pkg string
	// For a server: the size of oversized-input's request line, and the
	// arguments of the TypeScript server after its package set.
	oversized  int
	serverArgs []string
	// For a client: its flags before "--" and hostprobe's own.
	hostFlags, probeFlags []string
	// criteria run, and each one's verdicts (the first is the one the
	// table shows; more than one where the SDK races, see the notes).
	want map[string][]assertions.Verdict
}

func (r release) key() string {
	return strings.Join(slices.Concat([]string{r.sdk, r.pkg, r.version, r.side}, r.serverArgs, r.hostFlags, r.probeFlags), " ")
}

// label names the release in the document: its version, after its
// package if it is not the SDK's.
func (r release) label() string {
	if r.pkg != "" {
		return "`" + r.pkg + "` " + r.version
	}
	return r.version
}

// tsServerPkg is the 2.x line's server package.
const tsServerPkg = "@modelcontextprotocol/server"

// pins is where the pinned programs live: go/ and ts/.
func pinDir(t *testing.T, parts ...string) string {
	t.Helper()
	d, err := filepath.Abs(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// builds holds what each release's build gave, built once per test binary.
var builds struct {
	mu   sync.Mutex
	once map[string]*buildOnce
	dir  string
}

type buildOnce struct {
	once sync.Once
	path string
	err  error
}

// built runs fn once per key and returns its result. Keys name the
// directory built into: each test has its own, removed when it ends.
func built(key string, fn func() (string, error)) (string, error) {
	builds.mu.Lock()
	if builds.once == nil {
		builds.once = map[string]*buildOnce{}
	}
	b := builds.once[key]
	if b == nil {
		b = &buildOnce{}
		builds.once[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.err = fn() })
	return b.path, b.err
}

// goProgram builds the server or client of sdk at version against its pin,
// go/pins/SDK-VERSION.mod, once, and returns the binary.
func goProgram(t *testing.T, binDir, sdk, version, side string) string {
	t.Helper()
	pkg := map[string]string{"go-sdk": "gosdk", "mcp-go": "mcpgo"}[sdk]
	prog := pkg + side
	out, err := built(binDir+" "+sdk+"@"+version, func() (string, error) {
		dir := filepath.Join(binDir, pkg+"-"+version)
		mod := filepath.Join("pins", pkg+"-"+version+".mod")
		pkgs := []string{"./" + pkg + "server", "./" + pkg + "client"}
		if sdk == "go-sdk" {
			pkgs = append(pkgs, "./deafserver") // for TestGoSDKCancelWrite
		}
		cmd := exec.Command("go", append([]string{"build", "-modfile=" + mod, "-o", dir + string(filepath.Separator)}, pkgs...)...)
		cmd.Dir = pinDir(t, "go")
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build -modfile=%s: %v\n%s", mod, err, b)
		}
		return dir, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, prog)
}

// mcpstdioBin builds the mcpstdio command once, for hostprobe.
func mcpstdioBin(t *testing.T, binDir string) string {
	t.Helper()
	out, err := built(binDir+" mcpstdio", func() (string, error) {
		out := filepath.Join(binDir, "mcpstdio")
		if b, err := exec.Command("go", "build", "-o", out, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio").CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build mcpstdio: %v\n%s", err, b)
		}
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tsPin returns r's pinned package set, ts/sdk-VERSION (ts/server-VERSION
// for the 2.x server), skipping t when node or the set is not installed
// there.
func tsPin(t *testing.T, r release) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skipf("node is not on PATH: %v", err)
	}
	pkg, name := "@modelcontextprotocol/sdk", "sdk-"+r.version
	if r.pkg != "" {
		pkg, name = r.pkg, strings.TrimPrefix(r.pkg, "@modelcontextprotocol/")+"-"+r.version
	}
	dir := pinDir(t, "ts", name)
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		t.Skipf("%s %s is not installed (run `npm ci` in integration/history/ts/%s): %v", pkg, r.version, name, err)
	}
	var p struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &p); err != nil || p.Version != r.version {
		t.Fatalf("ts/%s holds %s %q (run `npm ci` there)", name, pkg, p.Version)
	}
	return dir
}

// serverTarget is the server of r as a command.
func serverTarget(t *testing.T, binDir string, r release) mcptest.Target {
	if r.sdk == "ts-sdk" {
		script := "server.mjs"
		if r.pkg == tsServerPkg {
			script = "server2.mjs"
		}
		return mcptest.Command("node", append([]string{pinDir(t, "ts", script), tsPin(t, r)}, r.serverArgs...)...)
	}
	return mcptest.Command(goProgram(t, binDir, r.sdk, r.version, "server"))
}

// hostArgv is the client of r as a host command for hostprobe.
func hostArgv(t *testing.T, binDir string, r release) []string {
	var argv []string
	if r.sdk == "ts-sdk" {
		argv = []string{"node", pinDir(t, "ts", "call.mjs"), tsPin(t, r)}
	} else {
		argv = []string{goProgram(t, binDir, r.sdk, r.version, "client")}
	}
	return append(append(argv, r.hostFlags...), "--", "{server}")
}

// names is the criteria r runs, sorted by name.
func (r release) names() []string {
	var n []string
	for k := range r.want {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

func runRegexp(names []string) *regexp.Regexp {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return regexp.MustCompile("^(?:" + strings.Join(q, "|") + ")$")
}

// slots bounds how many releases run at once: the criteria must judge the
// SDK, not a machine swamped by the other batteries (with every release at
// once, a loaded 2-core machine took over 3 s to carry a 1 MiB response to
// a Go client).
var slots = make(chan struct{}, 4)

// verdicts runs r's criteria as a subtest of t and returns their verdicts
// and evidence, or why they did not run. It may be called from any
// goroutine.
func verdicts(t *testing.T, binDir string, r release) (map[string]assertions.Verdict, map[string]string, string) {
	var rep *assertions.Report
	ok := t.Run(r.key(), func(t *testing.T) {
		slots <- struct{}{}
		defer func() { <-slots }()
		begin := time.Now()
		if r.side == "server" {
			rep = runServer(t, binDir, r)
		} else {
			rep = runHost(t, binDir, r)
		}
		t.Logf("%s: %d criteria in %v", r.key(), len(rep.Results), time.Since(begin).Round(time.Millisecond))
	})
	if rep == nil || !ok {
		return nil, nil, fmt.Sprintf("%s did not run or failed: see its subtest", r.key())
	}
	evidence := map[string]string{}
	for _, res := range rep.Results {
		evidence[res.Name] = res.Evidence
	}
	return rep.Verdicts(), evidence, ""
}

// runServer runs r's server criteria: all of them but oversized-input with
// the battery's defaults, and oversized-input on its own with r's size.
func runServer(t *testing.T, binDir string, r release) *assertions.Report {
	target := serverTarget(t, binDir, r)
	names := r.names()
	rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "oversized-input" })
	cfg := assertions.ServerConfig{
		Large: &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}},
		Slow:  &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 10}},
		// Node takes over 2 s to exit when the other batteries load the machine.
		ShutdownGrace: 5 * time.Second,
		Run:           runRegexp(rest),
	}
	var over *assertions.Report
	var wg sync.WaitGroup
	if slices.Contains(names, "oversized-input") {
		// Beside the rest, in a pipe of 1 MiB: node reads the line in
		// chunks of 64 KiB rather than 16 KiB, and its ReadBuffer copies
		// the whole line for each.
		wg.Go(func() {
			over = assertions.CheckServer(t.Context(), target, assertions.ServerConfig{
				OversizedRequest: r.oversized, PipeCapacity: 1 << 20, Within: time.Minute,
				Run: regexp.MustCompile(`^oversized-input$`),
			})
		})
	}
	rep := assertions.CheckServer(t.Context(), target, cfg)
	wg.Wait()
	if over != nil {
		rep.Results = append(rep.Results, over.Results...)
	}
	return rep
}

// runHost runs r's host criteria through mcpstdio hostprobe -json, in three
// hostprobe runs side by side (hostprobe runs its criteria one after the
// other, and a host that hangs costs its bound).
func runHost(t *testing.T, binDir string, r release) *assertions.Report {
	argv := hostArgv(t, binDir, r)
	bin := mcpstdioBin(t, binDir)
	names := r.names()
	reps := make([]*assertions.Report, 3)
	var wg sync.WaitGroup
	for i := range reps {
		var part []string
		for j := i; j < len(names); j += len(reps) {
			part = append(part, names[j])
		}
		if len(part) > 0 {
			wg.Go(func() { reps[i] = hostProbe(t, bin, argv, part, r.probeFlags) })
		}
	}
	wg.Wait()
	rep := &assertions.Report{}
	for i, p := range reps {
		if p == nil && i < len(names) { // a run that was made and failed
			t.FailNow()
		}
		if p != nil {
			rep.Results = append(rep.Results, p.Results...)
		}
	}
	return rep
}

// hostProbe runs mcpstdio hostprobe -json on the named criteria of the host
// argv; it reports a failure to t and returns nil when it cannot.
func hostProbe(t *testing.T, bin string, argv, names, probeFlags []string) *assertions.Report {
	args := append([]string{"hostprobe", "-json", "-run", runRegexp(names).String(),
		"-host-cap", "15s", "-huge-field", "1048576", "-blocks", "2000", "-stderr-noise", "8388608"}, probeFlags...)
	args = append(append(args, "--"), argv...)
	// Each criterion is bounded by hostprobe (at most the cap and 3×within);
	// this bounds the whole run.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
		t.Errorf("mcpstdio %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		return nil
	}
	var rep assertions.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Errorf("mcpstdio %s: the -json report: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
		return nil
	}
	return &rep
}

// TestHistory runs every pair's releases and checks that each gets the
// verdicts the table says, and that the two releases of a pair differ
// exactly on the criteria its fix is about. The releases run side by side
// (subtests started from goroutines, not t.Parallel, which go test bounds
// by GOMAXPROCS: most runs wait on a host's timeout), the server batteries
// bounded by slots; then each pair is judged.
func TestHistory(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the verdicts were measured on Linux, where the criteria see /proc and FIONREAD")
	}
	binDir := t.TempDir()
	type result struct {
		verdicts map[string]assertions.Verdict
		evidence map[string]string
		skip     string
	}
	results := map[string]*result{}
	var wg sync.WaitGroup
	for _, p := range pairs {
		for _, r := range append([]release{p.before, p.after}, openBugReleases()...) {
			if results[r.key()] != nil {
				continue
			}
			res := &result{}
			results[r.key()] = res
			wg.Go(func() { res.verdicts, res.evidence, res.skip = verdicts(t, binDir, r) })
		}
	}
	wg.Wait()
	for _, b := range openBugs {
		t.Run("open/"+b.release.key(), func(t *testing.T) {
			res := results[b.release.key()]
			if res.skip != "" {
				t.Skip(res.skip)
			}
			for _, n := range b.release.names() {
				if !slices.Contains(b.release.want[n], res.verdicts[n]) {
					t.Errorf("%s: %s = %s, want %v\n  evidence: %s", b.release.key(), n, res.verdicts[n], b.release.want[n], res.evidence[n])
				}
			}
		})
	}
	for _, p := range pairs {
		t.Run(p.name(), func(t *testing.T) {
			got := [2]map[string]assertions.Verdict{}
			ev := [2]map[string]string{}
			for i, r := range []release{p.before, p.after} {
				res := results[r.key()]
				if res.skip != "" {
					t.Skip(res.skip)
				}
				got[i], ev[i] = res.verdicts, res.evidence
			}
			for i, r := range []release{p.before, p.after} {
				for _, n := range r.names() {
					if !slices.Contains(r.want[n], got[i][n]) {
						t.Errorf("%s %s %s: %s = %s, want %v\n  evidence: %s", r.sdk, r.version, r.side, n, got[i][n], r.want[n], ev[i][n])
					}
				}
			}
			var differ []string
			for _, n := range p.before.names() {
				if got[0][n] != got[1][n] {
					differ = append(differ, n)
				}
			}
			for _, n := range differ {
				if !slices.Contains(p.flips, n) && !(len(p.before.want[n]) > 1 || len(p.after.want[n]) > 1) {
					t.Errorf("%s and %s differ on %s (%s, %s), which the fix is not about", p.before.version, p.after.version, n, got[0][n], got[1][n])
				}
			}
			for _, n := range p.flips {
				if got[0][n] == got[1][n] {
					t.Errorf("%s and %s agree on %s (%s): the fix did not flip it", p.before.version, p.after.version, n, got[0][n])
				}
			}
		})
	}
}
