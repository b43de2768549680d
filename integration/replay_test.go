package integration_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpstdio/mcpstdio/integration"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// The official Go SDK's server with a bounded "big": the fix for the hang
// (a result contract that bounds what a tool returns).
func init() {
	mcptest.RegisterHelper("go-sdk-bounded", func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, _ io.Writer) error {
		s := mcp.NewServer(&mcp.Implementation{Name: "mcpstdio-integration-go-sdk", Version: "0"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "returns at most 1 KiB"},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				Bytes int `json:"bytes,omitempty"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", min(in.Bytes, 1024))}}}, nil, nil
			})
		mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "returns its text"},
			func(_ context.Context, _ *mcp.CallToolRequest, in struct {
				Text string `json:"text,omitempty"`
			}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
		return s.Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	})
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// mcpstdioBinary builds the command once per test binary.
func mcpstdioBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcpstdio-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "mcpstdio")
		if runtime.GOOS == "windows" {
			builtBin += ".exe"
		}
		out, err := exec.Command("go", "build", "-o", builtBin, "github.com/mcpstdio/mcpstdio/cmd/mcpstdio").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building the command: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// recordStallCancel records, through the built proxy (with flags, by
// default -log-bodies) in front of the Go SDK's server, the session of the seed article: the host
// stops reading, calls big (4 MiB), waits until the server is blocked
// writing, cancels, resumes, reads the result, pings and calls echo. It
// returns the record's file.
func recordStallCancel(t *testing.T, ctx context.Context, flags ...string) string {
	t.Helper()
	srv := mustHelper(t, ctx, "go-sdk")
	log := filepath.Join(t.TempDir(), "hang.ndjson")
	if flags == nil {
		flags = []string{"-log-bodies"}
	}
	args := append(append([]string{"proxy"}, flags...), "-log", log, "--", srv.Path)
	pc := exec.CommandContext(ctx, mcpstdioBinary(t), append(args, srv.Args[1:]...)...)
	pc.Env = srv.Env
	s := mcptest.StartServer(t, mcptest.Exec(pc))
	s.StallReads()
	big := s.Send("tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": 4 << 20}})
	if err := s.WaitWriterBlocked(ctx); err != nil {
		t.Fatal(err)
	}
	// The proxy's write to the host has blocked long enough for the
	// record to say so (its -block-event, 100ms): the cancel is sent
	// while the record shows the host not reading.
	waitRecordEvent(t, ctx, log, `"ev":"block","dir":"out"`)
	if err := big.Cancel("the host gave up"); err != nil {
		t.Fatal(err)
	}
	s.ResumeReads()
	if _, err := big.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(ctx, "echo", map[string]any{"text": "after"}); err != nil {
		t.Fatal(err)
	}
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitExit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return log
}

// waitRecordEvent waits until the record file at log holds an event
// with the text ev. The file has no event to wait on: it is read again
// every 5ms, bounded by ctx.
func waitRecordEvent(t *testing.T, ctx context.Context, log, ev string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(log); err == nil && strings.Contains(string(b), ev) {
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("the record %s has no %s event: %v", log, ev, ctx.Err())
		}
	}
}

// TestReplayStallCycle: a stall-cancel-resume session recorded through the
// built proxy replays, compared message by message (Same), against the
// same server (the Go SDK's) with no departure and every stall verified,
// and against the server with the fix (a bounded result) reports
// stall-not-blocking, found before the cancel was sent.
func TestReplayStallCycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := recordStallCancel(t, ctx)
	if dir := os.Getenv("KEEP_FAILED_RECORDS"); dir != "" {
		t.Cleanup(func() {
			if t.Failed() {
				b, _ := os.ReadFile(log)
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("hang-%d.ndjson", time.Now().UnixNano())), b, 0o600)
			}
		})
	}
	t.Run("same server", func(t *testing.T) {
		rep := replay.TestServer(t, mcptest.Helper("go-sdk"), log, replay.Same(), replay.Strict())
		if !rep.Complete() || len(rep.Stalls) == 0 {
			t.Errorf("want every message checked and every stall (at least one) verified: %s", rep)
		}
	})
	t.Run("bounded server", func(t *testing.T) {
		rec, err := replay.Load(log)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Host(ctx, mcptest.Helper("go-sdk-bounded"), rec, replay.Same())
		if err != nil {
			t.Fatal(err)
		}
		// Found where the recorded host acted next (its cancel), not at the
		// end. The bounded server's short answer is compared when it
		// comes: after the stall where the recorded host stopped reading
		// at the big response's start, before it where the recorded host
		// had read past the answer's length (1560 bytes, recorded with one
		// core busy: the answer then came first).
		stall := -1
		for i, d := range rep.Departures {
			if d.Kind == replay.StallNotBlocking && stall < 0 && strings.Contains(d.Text, "by the recorded host's next action") {
				stall = i
			}
		}
		if rep.Count(replay.StallNotBlocking) != 1 || stall < 0 || rep.Err() == nil {
			t.Errorf("want one stall-not-blocking, found at the recorded host's next action: %s", rep)
		}
	})
	// Other servers with the same tools: the replay runs to the end and
	// names where they depart (their handshake answers differ at least),
	// never "as recorded".
	for _, other := range []struct {
		name   string
		target mcptest.Target
		ts     bool
	}{
		{"other server mcp-go", mcptest.Helper("mcp-go"), false},
		{"other server TypeScript SDK", integration.TSSDKServer(tsDir), true},
	} {
		t.Run(other.name, func(t *testing.T) {
			if other.ts {
				needTS(t)
			}
			rec, err := replay.Load(log)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Host(ctx, other.target, rec, replay.Same())
			t.Logf("%s", rep)
			if err != nil || rep.Stopped != nil {
				t.Fatalf("the replay did not run to the end: %v", err)
			}
			named := 0
			for _, d := range rep.Departures {
				if d.Kind != replay.Unchecked && d.Seq >= 0 && d.Method != "" {
					named++
				}
			}
			if rep.Err() == nil || named == 0 || strings.Contains(strings.SplitN(rep.String(), "\n", 2)[0], "as recorded") {
				t.Errorf("want departures named by record seq and method, and no \"as recorded\": %s", rep)
			}
		})
	}
	// Recorded without -log-bodies, the messages longer than a head are
	// not checked: the headline says so, and Strict fails.
	t.Run("heads only", func(t *testing.T) {
		rec, err := replay.Load(recordStallCancel(t, ctx, "-head", "256"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replay.Host(ctx, mcptest.Helper("go-sdk"), rec, replay.Same(), replay.Strict())
		head := strings.SplitN(rep.String(), "\n", 2)[0]
		t.Logf("%s", rep)
		if err != nil || rep.Count(replay.Unchecked) == 0 || strings.Contains(head, "as recorded:") || !strings.Contains(head, "heads") || rep.Err() == nil {
			t.Errorf("want the unchecked messages in the headline, and a Strict failure: %v\n%s", err, rep)
		}
	})
	// The record cut in the middle of a line, as a killed proxy leaves it:
	// it plays up to the cut, with a note, and nothing departs.
	t.Run("cut record", func(t *testing.T) {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		cut := len(b) / 2
		for b[cut-1] == '\n' {
			cut++
		}
		path := filepath.Join(t.TempDir(), "cut.ndjson")
		if err := os.WriteFile(path, b[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		rep := replay.TestServer(t, mcptest.Helper("go-sdk"), path)
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "played up to it") }) || rep.Played == 0 {
			t.Errorf("want the record played up to its cut, with a note: %s", rep)
		}
	})
}
