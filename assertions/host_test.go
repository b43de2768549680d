package assertions_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

func TestCheckHostSession(t *testing.T) {
	t.Parallel()
	const limit = 1 << 20
	// The criteria that wait for the host's own timeout run side by side,
	// with the session's timeout (WithTimeout) short. Those that wait out
	// the session's own defaults (its 10s handshake timeout, its 2s grace
	// at each step of Close) keep them and run side by side too, each in
	// a battery of its own, rather than after one another in the rest's.
	own := []string{"host-timeout", "progress-forever", "late-after-cancel", "stdin-not-read"}
	waits := []string{"handshake-timeout", "shutdown-ladder"}
	var rest []string
	for _, n := range assertions.HostCriterionNames() {
		if !slices.Contains(own, n) && !slices.Contains(waits, n) {
			rest = append(rest, n)
		}
	}
	reports := make([]*assertions.Report, len(own)+len(waits)+1)
	concurrently(len(reports), func(i int) {
		if i >= len(own) {
			run := "^(" + strings.Join(rest, "|") + ")$"
			if j := i - len(own); j < len(waits) {
				run = "^" + waits[j] + "$"
			}
			reports[i] = assertions.CheckHost(t.Context(), assertions.SessionHost(mcptest.WithMaxFrame(limit)), assertions.HostConfig{MaxFrame: limit, StderrNoise: 8 << 20,
				Run: regexp.MustCompile(run)})
			return
		}
		reports[i] = assertions.CheckHost(t.Context(), assertions.SessionHost(mcptest.WithTimeout(3*time.Second)), assertions.HostConfig{Cap: 20 * time.Second,
			Run: regexp.MustCompile("^" + own[i] + "$")})
	})
	rep := reports[len(reports)-1]
	for _, r := range reports[:len(reports)-1] {
		rep.Results = append(rep.Results, r.Results...)
	}
	want := map[string]assertions.Verdict{}
	for _, n := range assertions.HostCriterionNames() {
		want[n] = assertions.Pass
	}
	if diff := cmp.Diff(want, rep.Verdicts()); diff != "" {
		t.Errorf("CheckHost(mcptest.Session) verdicts mismatch (-want +got):\n%s\nreport:\n%s", diff, rep)
	}
	// The session gives up the handshake by its own timeout and cancels
	// what it gave up on (TestHandshakeTimeout has the host that does not).
	for _, res := range rep.Results {
		if res.Name != "handshake-timeout" {
			continue
		}
		for _, s := range []string{"the fake never answered ", "the host gave up ", "sent notifications/cancelled for "} {
			if !strings.Contains(res.Evidence, s) {
				t.Errorf("handshake-timeout: evidence %q does not say %q", res.Evidence, s)
			}
		}
	}
	t.Logf("\n%s", rep)
}

// naiveHost is the host that back-pressure freezes: it reads the server's
// stdout only while it waits for a response, with no limit on a line, never
// reads stderr, ignores its context and never cancels.
type naiveHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *pipes.Pipe // piped, never read
	id     int
}

func newNaiveHost(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := pipes.New()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = stderr.W
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return nil, err
	}
	stderr.W.Close() // the child's copy is the one it writes
	h := &naiveHost{cmd: cmd, in: in, out: bufio.NewReader(out), stderr: stderr}
	stuck := h.watchStderr()
	_, err = h.request("initialize", map[string]any{
		"protocolVersion": wire.Version20251125, "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "naive", "version": "0"},
	})
	if n := stuck(); n > 0 {
		return h, fmt.Errorf("the server's stderr pipe is full (%d bytes) and this host never reads it: the server is blocked writing to it, and the handshake got no answer", n)
	}
	if err != nil {
		return h, err
	}
	_, err = fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h, err
}

// watchStderr watches, while the handshake is waited for, the stderr pipe
// this host never reads: once it is full, the server is blocked writing to
// it for good (nothing will ever read it), so the host ends the server
// rather than wait for an answer that cannot come. The function it returns
// stops the watch and says how many bytes the full pipe held, 0 if it did
// not fill. Where a pipe's fill level is unknown (not Linux), it only waits.
func (h *naiveHost) watchStderr() (stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		held := 0
		poll.Until(ctx, "the stderr pipe full", func() bool {
			full, err := h.stderr.Full()
			if full {
				n, _ := h.stderr.Buffered()
				held = max(n, 1)
				h.cmd.Process.Kill() // its stdout closes: the handshake's read returns
			}
			return full || err != nil
		})
		done <- held
	}()
	return func() int {
		cancel()
		return <-done
	}
}

func (h *naiveHost) request(method string, params any) (json.RawMessage, error) {
	h.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.id, "method": method, "params": params})
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	for {
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *wire.RPCError
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil || *m.ID != h.id {
			continue
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	}
}

func (h *naiveHost) CallTool(_ context.Context, name string, args map[string]any) (json.RawMessage, error) {
	return h.request("tools/call", map[string]any{"name": name, "arguments": args})
}

func (h *naiveHost) Close() error {
	h.in.Close()
	h.cmd.Process.Kill()
	err := h.cmd.Wait()
	h.stderr.Close()
	return err
}

func TestCheckHostNaive(t *testing.T) {
	t.Parallel()
	// One battery per criterion, side by side: most of them wait out a
	// bound on this host. It has no timeout of its own, so the criteria
	// that wait for one fail at any Cap: a short one.
	names := assertions.HostCriterionNames()
	reports := make([]*assertions.Report, len(names))
	concurrently(len(names), func(i int) {
		cfg := assertions.HostConfig{MaxFrame: 1 << 20, Within: 4 * time.Second, StartTimeout: 20 * time.Second, StderrNoise: 1 << 20, Cap: time.Second,
			Run: regexp.MustCompile("^" + regexp.QuoteMeta(names[i]) + "$")}
		reports[i] = assertions.CheckHost(t.Context(), newNaiveHost, cfg)
	})
	rep := &assertions.Report{Subject: reports[0].Subject}
	for _, r := range reports {
		rep.Results = append(rep.Results, r.Results...)
	}
	want := map[string]assertions.Verdict{}
	for _, n := range assertions.HostCriterionNames() {
		want[n] = assertions.Pass
	}
	// What the naive host gets wrong, and nothing else.
	want["over-limit"] = assertions.Fail           // no transport limit: it parses anything
	want["stderr-noise"] = assertions.Fail         // stderr piped and never read: the fake blocks on it
	want["cancel-during-output"] = assertions.Fail // ignores its context, never cancels
	want["idle-notifications"] = assertions.Fail   // reads stdout only while waiting for a response
	want["era-modern"] = assertions.Fail           // speaks only the initialize handshake
	want["host-timeout"] = assertions.Fail         // no timeout of its own, and it ignores its context
	want["progress-forever"] = assertions.Fail     // the same
	want["late-after-cancel"] = assertions.Skip    // it never cancels: nothing to answer late
	want["stdin-not-read"] = assertions.Fail       // its write blocks for good
	want["close-bounded"] = assertions.Fail        // it ignores its context: its call waits for the answer
	if runtime.GOOS != "linux" {
		want["close-bounded"] = assertions.Skip // the fake fills its stdin pipe through /proc
	}
	want["large-tools-list"] = assertions.Skip  // it cannot list tools
	want["shutdown-ladder"] = assertions.Warn   // it kills its server outright, stdin closed but no wait
	want["handshake-timeout"] = assertions.Fail // no timeout of its own
	if diff := cmp.Diff(want, rep.Verdicts()); diff != "" {
		t.Errorf("CheckHost(naive host) verdicts mismatch (-want +got):\n%s\nreport:\n%s", diff, rep)
	}
	// On Linux the host sees the stderr pipe it never reads full (elsewhere
	// its start waits out StartTimeout).
	for _, res := range rep.Results {
		if res.Name == "stderr-noise" && runtime.GOOS == "linux" && !strings.Contains(res.Evidence, "stderr pipe is full") {
			t.Errorf("stderr-noise: %s (%s), want the failed start to say the stderr pipe is full", res.Verdict, res.Evidence)
		}
	}
}

// TestHostCriteria runs part of the host battery as subtests against this
// library's own host (TestCheckHostSession runs all of it).
func TestHostCriteria(t *testing.T) {
	const limit = 1 << 20
	assertions.HostCriteria(t, assertions.SessionHost(mcptest.WithMaxFrame(limit)), assertions.HostConfig{
		MaxFrame: limit,
		Run:      regexp.MustCompile(`^(over-limit|junk-on-stdout|era-legacy)$`),
	})
}

// badClient is a host adapter that fails in the ways adapters do.
type badClient struct {
	inner      assertions.Host
	panicCall  bool
	closeBlock chan struct{} // Close waits for it before closing inner
}

func (c *badClient) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	if c.panicCall {
		panic("adapter bug in CallTool")
	}
	return c.inner.CallTool(ctx, name, args)
}

func (c *badClient) Close() error {
	if c.closeBlock != nil {
		<-c.closeBlock
	}
	return c.inner.Close()
}

// TestHostAdapterFaults: a factory that returns a typed nil with an error,
// one that panics, a host whose CallTool panics and one whose Close hangs
// each fail their criterion with what happened; the test binary goes on and
// the other criteria run.
func TestHostAdapterFaults(t *testing.T) {
	t.Parallel()
	cfg := assertions.HostConfig{Within: 2 * time.Second, Run: regexp.MustCompile(`^(junk-on-stdout|era-legacy)$`)}
	real := assertions.SessionHost()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name    string
		factory assertions.HostFactory
		want    string // in every criterion's evidence or details
		start   bool   // the host does not start: one result, "start"
	}{
		{"typed nil and an error", func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			var c *badClient
			return c, errors.New("connect failed")
		}, "connect failed", true},
		{"factory panics", func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			panic("adapter bug in the factory")
		}, "the HostFactory panicked: adapter bug in the factory", true},
		{"nil host, no error", func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			return nil, nil
		}, "returned a nil Host and no error", true},
		{"CallTool panics", func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			h, err := real(ctx, cmd)
			return &badClient{inner: h, panicCall: true}, err
		}, "the host's CallTool panicked: adapter bug in CallTool", false},
	}
	reports := make([]*assertions.Report, len(tests)+1)
	concurrently(len(tests)+1, func(i int) {
		if i < len(tests) {
			reports[i] = assertions.CheckHost(t.Context(), tests[i].factory, cfg)
			return
		}
		// A Close that does not return: the criterion still ends, and
		// says so.
		closeCfg := cfg
		closeCfg.Run = regexp.MustCompile(`^era-legacy$`)
		reports[i] = assertions.CheckHost(t.Context(), func(ctx context.Context, cmd *exec.Cmd) (assertions.Host, error) {
			h, err := real(ctx, cmd)
			return &badClient{inner: h, closeBlock: release}, err
		}, closeCfg)
	})
	for i, tt := range tests {
		rep := reports[i]
		// A factory that fails fails "start" once; a host that starts
		// and then fails fails each criterion.
		if want := map[bool]int{true: 1, false: 2}[tt.start]; len(rep.Results) != want || tt.start && rep.Results[0].Name != "start" {
			t.Errorf("%s: %d results, want %d:\n%s", tt.name, len(rep.Results), want, rep)
		}
		for _, res := range rep.Results {
			if res.Verdict != assertions.Fail || !strings.Contains(res.Evidence+res.Details, tt.want) {
				t.Errorf("%s: %s = %s (%s), want a failure saying %q", tt.name, res.Name, res.Verdict, res.Evidence, tt.want)
			}
		}
	}
	if res := reports[len(tests)].Results[0]; !strings.Contains(res.Details, "Close did not return within 2s") {
		t.Errorf("a host whose Close hangs: %+v, want the details to say so", res)
	}
}
