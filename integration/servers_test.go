package integration_test

import (
	"context"
	"io"
	"maps"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// serverConfig names the SDK servers' tools for the server criteria, sized
// so the battery is quick under -race: with the battery's 16 KiB pipes a
// 256 KiB response blocks the writer.
func serverConfig() assertions.ServerConfig {
	return assertions.ServerConfig{
		Large:   &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}},
		Slow:    &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 10}},
		Bounded: &assertions.ToolCall{Name: "search", Arguments: map[string]any{"query": "q", "total": 5000}},
		// Not needed by the criteria it bounds, and a server that ignores
		// EOF would cost this much per run.
		ShutdownGrace: time.Second,
		Run:           allBut(assertions.ServerCriterionNames(), "oversized-input"), // run on its own, below
	}
}

// allBut matches every name in names but those in except.
func allBut(names []string, except ...string) *regexp.Regexp {
	var keep []string
	for _, n := range names {
		if !slices.Contains(except, n) {
			keep = append(keep, regexp.QuoteMeta(n))
		}
	}
	return regexp.MustCompile("^(?:" + strings.Join(keep, "|") + ")$")
}

// oversizedConfig runs oversized-input alone with a request line just over
// the official Go SDK's 16 MiB limit: the smallest size that tells the two
// SDKs apart. Decoding 17 MiB of JSON under -race takes seconds, hence the
// longer bound.
func oversizedConfig() assertions.ServerConfig {
	return assertions.ServerConfig{
		OversizedRequest: integration.GoSDKMaxFrame + 1<<20,
		Within:           30 * time.Second,
		Run:              regexp.MustCompile(`^oversized-input$`),
	}
}

// checkServer runs the whole battery against target in two parts: cfg, and
// oversized-input alone.
func checkServer(t *testing.T, target mcptest.Target, cfg assertions.ServerConfig) (map[string]assertions.Verdict, []*assertions.Report) {
	t.Helper()
	rep := assertions.CheckServer(t.Context(), target, cfg)
	over := assertions.CheckServer(t.Context(), target, oversizedConfig())
	got := rep.Verdicts()
	maps.Copy(got, over.Verdicts())
	return got, []*assertions.Report{rep, over}
}

// want returns every criterion passing but those in changes (name, verdict
// pairs), and SIGTERM skipped for an in-process server, which has no
// process to signal.
func want(path string, changes ...any) map[string]assertions.Verdict {
	m := map[string]assertions.Verdict{}
	for _, n := range assertions.ServerCriterionNames() {
		m[n] = assertions.Pass
	}
	if path == "in-process" {
		m["shutdown-sigterm"] = assertions.Skip
	}
	for i := 0; i < len(changes); i += 2 {
		m[changes[i].(string)] = changes[i+1].(assertions.Verdict)
	}
	return m
}

// Source references below are to the SDKs in $(go env GOMODCACHE):
// GOSDK = github.com/modelcontextprotocol/go-sdk@v1.8.0,
// MCPGO = github.com/mark3labs/mcp-go@v1.6.0.

// goSDKServerVerdicts is what the criteria say about a server written with
// the official Go SDK v1.8.0.
func goSDKServerVerdicts(path string) map[string]assertions.Verdict {
	return want(path,
		// The SDK frames stdin with a json.Decoder over the whole stream,
		// not by lines; its reading goroutine returns on the first decode
		// error (GOSDK mcp/transport.go:524-549), which ends the read loop
		// (GOSDK internal/jsonrpc2/conn.go:517-519) and with it the
		// session: one invalid line closes the server's stdout.
		"invalid-json-input", assertions.Fail,
		// On stdin EOF the read loop ends the connection at once (GOSDK
		// internal/jsonrpc2/conn.go): requests read just before it, the
		// handshake among them, go unanswered. Measured by hand (five cheap
		// tools/calls written with the handshake in one write, then stdin
		// closed): 0 to 3 of 5 answered in 14 runs, never all.
		"eof-drains-pending", assertions.Fail,
		// The frame limit is 16 MiB (DefaultMaxLineLength); a frame over it
		// is errFrameTooLarge (GOSDK mcp/transport.go:562-579), which ends
		// the read loop like a decode error: the server exits instead of
		// rejecting the one frame.
		"oversized-input", assertions.Fail,
		// notifications/cancelled cancels the handler's context (GOSDK
		// mcp/transport.go:259-270): the work stops (measured by hand: no
		// progress after the cancel, no CPU), but a response is always
		// written for a call (GOSDK internal/jsonrpc2/conn.go:704-718):
		// cancelled before the handler ran, an error "context canceled";
		// cancelled while it runs, a CallToolResult with isError (GOSDK
		// mcp/server.go:425-433), 1-21 ms after the cancel. The work stopped
		// and the request was answered anyway: a warning with both facts
		// (the seed allows the race; the specification says SHOULD NOT).
		"cancel-before-work", assertions.Warn,
		"cancel-during-work", assertions.Warn,
	)
}

// mcpGoServerVerdicts is what the criteria say about a server written with
// mcp-go v1.6.0.
func mcpGoServerVerdicts(path string) map[string]assertions.Verdict {
	return want(path,
		// tools/call requests go to a queue of 100 for 5 workers (MCPGO
		// server/stdio.go:381-382, 617-635); when the workers are blocked
		// writing a response to a stdout nobody reads, the queue fills, and
		// a tools/call that finds it full is handled synchronously on the
		// read loop (MCPGO server/stdio.go:630-634), whose response write
		// blocks too: the read loop stops, and stdin with it. A flood of
		// ping or server/discover, answered off the queue, does not show
		// it; a flood of tools/call does, with a configured tool or not
		// (TestReadsWhileBlockedToolFlood), and so does the stdout blocked
		// by the server's own answers to server/discover (no Large call).
		"reads-while-blocked", assertions.Fail,
		// The worker that runs a cancelled tools/call stops (its context is
		// cancelled; measured by hand: no progress after the cancel, no CPU)
		// and still writes its response, -32603 "context canceled", 1-2 ms
		// after the cancel: the work stopped, the request was answered
		// anyway, a warning with both facts. From v1.6.0 the cancel of a
		// queued call is registered before it is queued (MCPGO
		// server/stdio.go:603-607), so a cancel right behind its request is
		// no longer lost; lostCancel still accepts the failure the race
		// gave before.
		"cancel-before-work", assertions.Warn,
		"cancel-during-work", assertions.Warn,
		// oversized-input passes: mcp-go has no line limit at all
		// (bufio.Reader.ReadString, MCPGO server/stdio.go:474-490), so a
		// 17 MiB line is read whole, answered with an error, and the session
		// goes on; memory is unbounded, which no criterion here measures.
		// eof-drains-pending passes: from v1.6.0 the workers drain the
		// queue after stdin's end (MCPGO server/stdio.go:453-466); v1.2.1
		// dropped queued calls, 38 of 40 sessions of fifty by hand.
	)
}

// tracked counts the running instances of an in-process server, so that a
// test can wait for every one to return before it ends: mcptest reports an
// in-process server that is still busy when its session closes, and lets
// it finish on its own (an mcp-go worker still decoding the 17 MiB request
// of oversized-input, for one), which goleak would then see.
type tracked struct {
	serve mcptest.ServeFunc
	wg    sync.WaitGroup
}

func (tr *tracked) Serve(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	tr.wg.Add(1)
	defer tr.wg.Done()
	return tr.serve(ctx, stdin, stdout, stderr)
}

// wait waits until every instance has returned, bounded by within.
func (tr *tracked) wait(t *testing.T, within time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { tr.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(within):
		buf := make([]byte, 1<<20)
		t.Fatalf("an in-process server was still running %v after its session closed:\n%s", within, buf[:runtime.Stack(buf, true)])
	}
}

// TestServerVerdicts runs the server criteria against servers built with each
// SDK, in-process and as a child process, and compares every verdict with
// the one observed for this SDK version: a change is a test failure to look
// at, not necessarily a regression.
func TestServerVerdicts(t *testing.T) {
	goSDK := &tracked{serve: integration.GoSDKServer()}
	mcpGo := &tracked{serve: integration.MCPGoServer()}
	tests := []struct {
		name   string
		target mcptest.Target
		inProc *tracked
		want   map[string]assertions.Verdict
	}{
		{"go-sdk/in-process", mcptest.InProcess(goSDK.Serve), goSDK, goSDKServerVerdicts("in-process")},
		{"go-sdk/child", mcptest.Helper("go-sdk"), nil, goSDKServerVerdicts("child")},
		// Only one mcp-go server may run in this process at a time (see
		// MCPGoServer): this is the only in-process one.
		{"mcp-go/in-process", mcptest.InProcess(mcpGo.Serve), mcpGo, mcpGoServerVerdicts("in-process")},
		{"mcp-go/child", mcptest.Helper("mcp-go"), nil, mcpGoServerVerdicts("child")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, reps := checkServer(t, tt.target, serverConfig())
			if tt.inProc != nil {
				tt.inProc.wait(t, time.Minute)
			}
			if strings.HasPrefix(tt.name, "mcp-go/") {
				lostCancel(tt.want, got, reps)
			}
			if strings.HasPrefix(tt.name, "go-sdk/") {
				racyEOF(t, tt.want, got)
			}
			compareServer(t, tt.name, tt.want, got, reps)
		})
	}
}

// racyEOF accepts the Go SDK's eof-drains-pending passing: the requests
// read just before stdin's EOF are dropped or not by a race between their
// handlers' writes and the connection's close (see goSDKServerVerdicts).
// Measured: 0 to 3 of 5 answered in 14 quiet runs, all 5 in-process in CI
// at a load of 19. A pass says what was seen (every request answered); it
// is logged, not hidden.
func racyEOF(t *testing.T, want, got map[string]assertions.Verdict) {
	const name = "eof-drains-pending"
	if want[name] == assertions.Fail && got[name] == assertions.Pass {
		t.Logf("%s passed this time: the Go SDK's drop at EOF (go-sdk#1061) is a race that this run did not lose", name)
		want[name] = assertions.Pass
	}
}

// lostCancel accepts mcp-go's cancel-before-work failing when the evidence
// is the work going on: its cancel right behind a request is lost or not,
// by a race in the SDK (see mcpGoServerVerdicts).
func lostCancel(want, got map[string]assertions.Verdict, reps []*assertions.Report) {
	const name = "cancel-before-work"
	for _, rep := range reps {
		for _, res := range rep.Results {
			if res.Name == name && got[name] == assertions.Fail && strings.HasPrefix(res.Evidence, "work went on after notifications/cancelled") {
				want[name] = assertions.Fail
			}
		}
	}
}

// compareServer fails t when got, the verdicts of checkServer's reps, is not
// want, and logs the evidence of every verdict that is not a pass.
func compareServer(t *testing.T, name string, want, got map[string]assertions.Verdict, reps []*assertions.Report) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("CheckServer(%s) verdicts mismatch (-want +got):\n%s\nreports:\n%s%s", name, diff, reps[0], reps[1])
	}
	for _, rep := range reps {
		for _, res := range rep.Results {
			if res.Verdict != assertions.Pass {
				t.Logf("%s %s: %s", res.Verdict, res.Name, res.Evidence)
			}
		}
	}
}

// TestReadsWhileBlockedToolFlood: reads-while-blocked floods stdin with
// tools/call whether or not a cheap tool call is configured, so that a
// server whose tool-call path stops its read loop fails either way.
func TestReadsWhileBlockedToolFlood(t *testing.T) {
	for _, tt := range []struct {
		server string
		want   assertions.Verdict
	}{{"go-sdk", assertions.Pass}, {"mcp-go", assertions.Fail}} {
		for _, cheap := range []*assertions.ToolCall{nil, {Name: "echo", Arguments: map[string]any{"text": "hi"}}} {
			name := tt.server + "/no-such-tool"
			if cheap != nil {
				name = tt.server + "/cheap-echo"
			}
			t.Run(name, func(t *testing.T) {
				cfg := serverConfig()
				cfg.Cheap = cheap
				cfg.Run = regexp.MustCompile(`^reads-while-blocked$`)
				rep := assertions.CheckServer(t.Context(), mcptest.Helper(tt.server), cfg)
				if got := rep.Verdicts()["reads-while-blocked"]; got != tt.want {
					t.Errorf("reads-while-blocked = %s, want %s\n%s", got, tt.want, rep)
				}
			})
		}
	}
}
