package assertions_test

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestLargeCallNotBlocking: when the bound runs out before the Large call
// blocks the server's stdout, the verdict goes by what was seen. A server
// still writing its response (slowly: the quiet server's slow-write, 4
// KiB/s into a 16 KiB pipe, which a 1s bound cannot fill) is "unverified"
// with the pipe's fill level and rate; a Large call whose whole response
// fits in the pipe is the configuration's failure, with its size.
func TestLargeCallNotBlocking(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stdout pipe's capacity and fill level need Linux")
	}
	t.Parallel()
	for _, tt := range []struct {
		name  string
		args  []string
		bytes int
		want  assertions.Verdict
		text  string // a regexp of the evidence
	}{
		{"slow writer", []string{"slow-write=4"}, 256 << 10, assertions.Warn,
			`^unverified: the Large call \(big .*\) did not block the server's stdout within the bound of [\d.]+m?s, but the server was still writing: after [\d.]+m?s the stdout pipe held \d+/16384 bytes, filling at [\d.]+ KB/s, full at that rate in about [\d.]+m?s.*; raise Within above about [\d.]+m?s to get a verdict$`},
		{"too small", nil, 2000, assertions.Fail,
			`^the Large call \(big .*\) returned only 20\d\d bytes, not more than the 16384-byte stdout pipe: configure a larger result \(with the host's reads stalled it did not block the server's stdout: after [\d.]+m?s the stdout pipe held 20\d\d/16384 bytes; the server`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := quietConfig()
			cfg.Within = time.Second
			cfg.Large = &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": tt.bytes}}
			cfg.Run = regexp.MustCompile(`^(reads-while-blocked|stall-cancel-recover)$`)
			testkit.EachWay(t, func(t *testing.T, child bool) {
				rep := assertions.CheckServer(t.Context(), quiet(child, tt.args...), cfg)
				if len(rep.Results) != 2 {
					t.Fatalf("ran %d criteria, want 2:\n%s", len(rep.Results), rep)
				}
				for _, res := range rep.Results {
					if res.Verdict != tt.want || !regexp.MustCompile(tt.text).MatchString(res.Evidence) {
						t.Errorf("%s = %s (%s), want %s with %q", res.Name, res.Verdict, res.Evidence, tt.want, tt.text)
					} else {
						t.Logf("%s: %s: %s", res.Name, res.Verdict, res.Evidence)
					}
					if tt.want == assertions.Warn && !strings.Contains(res.Details, "verdict:") {
						t.Errorf("%s: details without the diagnosis: %q", res.Name, res.Details)
					}
				}
			})
		})
	}
}

// TestCheckWriterBlockedSlowWriter: a server still writing when the bound
// runs out is not said to have failed to block: "unverified", with the
// pipe's fill rate (TestCheckWriterBlockedFailsWithoutOutput has the idle
// server, which fails).
func TestCheckWriterBlockedSlowWriter(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the stdout pipe's capacity and fill level need Linux")
	}
	t.Parallel()
	s := mcptest.StartServer(t, quiet(false, "slow-write=4"), mcptest.WithPipeCapacity(16384))
	s.Send(wire.MethodToolsCall, map[string]any{"name": "big", "arguments": map[string]any{"bytes": 256 << 10}})
	res := assertions.CheckWriterBlocked(t.Context(), s, time.Second)
	want := regexp.MustCompile(`^unverified: the server did not block writing stdout within 1s with reads stalled, but the server was still writing: after [\d.]+m?s the stdout pipe held \d+/16384 bytes, filling at .*; raise the bound above about [\d.]+m?s to get a verdict$`)
	if res.Verdict != assertions.Warn || !want.MatchString(res.Evidence) {
		t.Errorf("CheckWriterBlocked = %s (%s), want warn with %q", res.Verdict, res.Evidence, want)
	}
}
