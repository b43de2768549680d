package assertions_test

import (
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestReadsWhileBlockedBusyGulps: a server that takes stdin in gulps
// seconds apart while it burns CPU, the gaps longer than three bounds (the
// old rule's "stopped"), is slow, not stopped: a warning with its rate,
// never a failure.
func TestReadsWhileBlockedBusyGulps(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the server's CPU demand is read from /proc: Linux only")
	}
	cfg := assertions.ServerConfig{
		Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}},
		Cheap:  &assertions.ToolCall{Name: "echo"},
		Within: 500 * time.Millisecond, // the flood's cap is 6×Within: 3 s, two gulps
		Run:    regexp.MustCompile(`^reads-while-blocked$`),
	}
	res := assertions.CheckServer(t.Context(), quiet(true, "gulp=1800ms", "async"), cfg).Results[0]
	if res.Verdict != assertions.Warn || !strings.Contains(res.Evidence, "slow, not stopped") || !strings.Contains(res.Evidence, "KB/s") {
		t.Errorf("reads-while-blocked = %s (%s), want a warning with the rate", res.Verdict, res.Evidence)
	}
}

// TestReadsWhileBlockedStoppedFast: a naive loop (its read loop writes
// every reply itself) is failed as soon as it is seen stopped, with the
// evidence, not after two bounds (whose failure says so); and the control
// flood, with the host reading, counts the answers of a server that answers
// integer ids only.
func TestReadsWhileBlockedStoppedFast(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("thread states are read from /proc: Linux only")
	}
	cfg := assertions.ServerConfig{
		Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}},
		Cheap:  &assertions.ToolCall{Name: "echo"},
		Within: 5 * time.Second,
		Run:    regexp.MustCompile(`^reads-while-blocked$`),
	}
	res := assertions.CheckServer(t.Context(), quiet(true, "int-ids"), cfg).Results[0]
	if res.Verdict != assertions.Fail || !strings.Contains(res.Evidence, "the server stopped reading stdin") ||
		!strings.Contains(res.Evidence, "the stalled stdout is the cause") {
		t.Errorf("reads-while-blocked = %s (%s), want a failure: stopped, with the control flood through", res.Verdict, res.Evidence)
	}
	if res.Duration >= 2*cfg.Within {
		t.Errorf("the criterion took %v, two bounds (%v) or more: the evidence was waited out", res.Duration, 2*cfg.Within)
	}
}

// TestSpacedJSONIDs: a correct server that writes JSON with spaces
// ("id": "x", as Python's json.dumps does) has its answers found.
func TestSpacedJSONIDs(t *testing.T) {
	t.Parallel()
	cfg := assertions.ServerConfig{
		Within: 2 * time.Second,
		Run:    regexp.MustCompile(`^(invalid-json-input|eof-drains-pending)$`),
	}
	rep := assertions.CheckServer(t.Context(), quiet(true, "spaced", "async"), cfg)
	for _, res := range rep.Results {
		if res.Verdict != assertions.Pass {
			t.Errorf("%s = %s (%s), want pass", res.Name, res.Verdict, res.Evidence)
		}
	}
}
