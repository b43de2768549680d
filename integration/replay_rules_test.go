package integration_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// The three field hangs with real servers: each recorded through the built
// proxy in front of mcp-go's MCPServer behind a read loop that handles each
// message before reading the next (the server that hangs), then replayed
// by the rules, in go test (replay.TestServer) and from the shell (mcpstdio
// replay): red on that server, green on the fixed one, the official Go
// SDK's (which reads stdin on its own goroutine and honours cancels).

// fieldHang is a field hang recorded with a real server.
type fieldHang struct {
	name  string
	fault string // the proxy's -fault, if any
	rule  string // the rule the looping server fails
	host  func(t *testing.T, ctx context.Context, s *mcptest.Session, log string)
}

var fieldHangs = []fieldHang{
	{"host-stall", "", replay.RuleReadsWhileBlocked, func(t *testing.T, ctx context.Context, s *mcptest.Session, log string) {
		// The host stops reading in a 1 MiB result for a second, cancels
		// it and pings.
		s.StallReads()
		stalled := time.Now()
		big := s.Send("tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": 1 << 20}})
		if err := s.WaitWriterBlocked(ctx); err != nil {
			t.Fatal(err)
		}
		waitRecordEvent(t, ctx, log, `"ev":"block","dir":"out"`)
		if err := big.Cancel("the host gave up"); err != nil {
			t.Fatal(err)
		}
		ping := s.Send("ping", nil)
		waitRecordEvent(t, ctx, log, `"ev":"cancel"`)
		waitRecordEvent(t, ctx, log, `"method":"ping"`)
		<-time.After(time.Until(stalled.Add(time.Second)))
		s.ResumeReads()
		if _, err := ping.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}},
	{"fault-stall", "out:stop:after_bytes=200KiB,for=3s", replay.RuleReadsWhileBlocked, func(t *testing.T, ctx context.Context, s *mcptest.Session, log string) {
		// The proxy stops reading stdout in a 1 MiB result for 3 s; the
		// host calls echo, then cancels both calls.
		big := s.Send("tools/call", map[string]any{"name": "big", "arguments": map[string]any{"bytes": 1 << 20}})
		waitRecordEvent(t, ctx, log, `"ev":"fault"`)
		echo := s.Send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "are you there"}})
		waitRecordEvent(t, ctx, log, `"tool":"echo"`)
		for _, p := range []*mcptest.Pending{big, echo} {
			if err := p.Cancel("timed out"); err != nil {
				t.Fatal(err)
			}
		}
		waitRecordEvent(t, ctx, log, fmt.Sprintf(`"ev":"cancel","dir":"in","id":%d`, echo.ID()))
		waitRecordEvent(t, ctx, log, `reading the server's stdout again`)
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}},
	{"cancel-slow", "", replay.RuleCancel, func(t *testing.T, ctx context.Context, s *mcptest.Session, log string) {
		// The host cancels a slow call after its second progress
		// notification, and pings.
		slow := s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 20, "intervalMs": 100},
			"_meta": map[string]any{"progressToken": "slow"}})
		for slow.Progress() < 2 {
			select {
			case <-s.Changed():
			case <-ctx.Done():
				t.Fatal("no progress")
			}
		}
		if err := slow.Cancel("the user pressed stop"); err != nil {
			t.Fatal(err)
		}
		ping := s.Send("ping", nil)
		waitRecordEvent(t, ctx, log, `"ev":"cancel"`)
		if _, err := ping.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}},
}

// recordFieldHang records h through the built proxy in front of the
// helper server, and returns the record's file.
func recordFieldHang(t *testing.T, ctx context.Context, h fieldHang, server string) string {
	t.Helper()
	srv := mustHelper(t, ctx, server)
	log := filepath.Join(t.TempDir(), h.name+".ndjson")
	args := []string{"proxy", "-log-bodies", "-log", log}
	if h.fault != "" {
		args = append(args, "-fault", h.fault)
	}
	args = append(append(args, "--", srv.Path), srv.Args[1:]...)
	pc := exec.CommandContext(ctx, mcpstdioBinary(t), args...)
	pc.Env = srv.Env
	s := mcptest.StartServer(t, mcptest.Exec(pc))
	h.host(t, ctx, s, log)
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

// failures is a testing.TB that keeps the test's errors instead of
// failing it, for a replay that must fail.
type failures struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

func (f *failures) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }

// TestReplayFieldHangs: each field hang recorded with the looping mcp-go
// server fails, replayed by the rules against it, naming its rule in the
// first line, and passes against the Go SDK's server, in go test and from
// the shell.
func TestReplayFieldHangs(t *testing.T) {
	for _, h := range fieldHangs {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			log := recordFieldHang(t, ctx, h, "mcp-go-loop")
			if dir := os.Getenv("KEEP_FAILED_RECORDS"); dir != "" {
				t.Cleanup(func() {
					if t.Failed() {
						b, _ := os.ReadFile(log)
						_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.ndjson", h.name, time.Now().UnixNano())), b, 0o600)
					}
				})
			}
			t.Run("go test/looping mcp-go", func(t *testing.T) {
				f := &failures{T: t}
				rep := replay.TestServer(f, mcptest.Helper("mcp-go-loop"), log)
				head := strings.SplitN(rep.String(), "\n", 2)[0]
				if len(f.errs) != 1 || !strings.HasPrefix(head, "replay: FAIL "+h.rule+" at seq ") || !strings.Contains(f.errs[0], head) {
					t.Errorf("want one test error whose first line names %s failed, got %d:\n%s", h.rule, len(f.errs), strings.Join(f.errs, "\n"))
				}
			})
			t.Run("go test/go-sdk", func(t *testing.T) {
				replay.TestServer(t, mcptest.Helper("go-sdk"), log)
			})
			for _, tc := range []struct {
				server string
				code   int
				head   string
			}{
				{"mcp-go-loop", 1, "replay: FAIL " + h.rule + " at seq "},
				{"go-sdk", 0, "replay: PASS by the rules"},
			} {
				t.Run("shell/"+tc.server, func(t *testing.T) {
					srv := mustHelper(t, ctx, tc.server)
					cmd := exec.CommandContext(ctx, mcpstdioBinary(t), append([]string{"replay", "-record", log, "--", srv.Path}, srv.Args[1:]...)...)
					cmd.Env = srv.Env
					out, err := cmd.Output()
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					} else if err != nil {
						t.Fatal(err)
					}
					if code != tc.code || !strings.HasPrefix(string(out), tc.head) {
						t.Errorf("mcpstdio replay -- %s: exit %d, want %d and a first line starting %q:\n%s", tc.server, code, tc.code, tc.head, out)
					}
				})
			}
		})
	}
}
