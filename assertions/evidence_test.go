package assertions_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	quietsrv "github.com/mcpstdio/mcpstdio/assertions/testdata/quiet"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// quiet returns the quiet server with args, as a child or in-process.
func quiet(child bool, args ...string) mcptest.Target {
	if child {
		return quietChild(args...)
	}
	return mcptest.InProcess(quietsrv.Server(args))
}

func quietConfig() assertions.ServerConfig {
	return assertions.ServerConfig{
		Slow:        &assertions.ToolCall{Name: "slow"},
		Large:       &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}},
		CancelGrace: 100 * time.Millisecond,
		Within:      2 * time.Second,
		Run:         regexp.MustCompile(`^cancel-during-work$`),
	}
}

// TestCancelEvidence: the cancel criteria say "stopped" only with evidence,
// see work going on by its CPU time and by the processes it started, and
// say "unverified" when nothing can show either. The quiet server speaks
// 2025-11-25, where going on after a cancel is a SHOULD NOT: a warning.
func TestCancelEvidence(t *testing.T) {
	t.Parallel()
	linux := runtime.GOOS == "linux"
	tests := []struct {
		name     string
		args     []string
		child    bool
		slowFor  time.Duration // ServerConfig.SlowDuration
		want     assertions.Verdict
		evidence string
	}{
		// A sleeping call with no progress that ignores the cancel and
		// answers when done, long after the watch (a loaded machine
		// stretches the steps before the cancel; with for=3s the watch
		// saw the answer 1.2 s after it at load 12): nothing shows it.
		{"sleeps, ignores cancel", []string{"work=sleep", "ignore-cancel", "for=30s"}, true, 0, assertions.Warn, "unverified"},
		// The same, watched for the call's own duration: its late answer
		// is seen.
		{"sleeps, ignores cancel, duration known", []string{"work=sleep", "ignore-cancel", "for=3s"}, true, 3 * time.Second, assertions.Fail, "its work ran to the end"},
		// A call that honours the cancel, watched for its whole duration.
		{"sleeps, honours cancel, duration known", []string{"work=sleep", "for=3s"}, true, 3 * time.Second, assertions.Pass, "no response within the call's own duration"},
		// Burning CPU after the cancel is work going on.
		{"burns, ignores cancel", []string{"work=burn", "ignore-cancel", "for=5s"}, true, 0, assertions.Fail, "of CPU"},
		// CPU use that falls to nothing is work that stopped.
		{"burns, honours cancel", []string{"work=burn", "for=5s"}, true, 0, assertions.Pass, "CPU use fell"},
		// In-process, CPU time cannot be told apart: unverified.
		{"burns, in-process", []string{"work=burn", "for=5s"}, false, 0, assertions.Warn, "an in-process server"},
		// A process started for the call and left running is work going on.
		{"spawns, ignores cancel", []string{"work=spawn", "ignore-cancel", "for=5s"}, true, 0, assertions.Fail, "sleep 30"},
		{"spawns, honours cancel", []string{"work=spawn", "for=5s"}, true, 0, assertions.Pass, "processes the call starts"},
		// A server that burns 60% of a CPU of its own, call or no call (a
		// language server indexing), answers the cancel at once: its CPU
		// after the grace is its own, not the call's (counted as the
		// call's, this was a false failure).
		{"background CPU, sleeps, answers the cancel", []string{"work=sleep", "for=5s", "background=0.6", "answer-cancel"}, true, 0, assertions.Warn, "unverified"},
		{"background CPU, spawns, answers the cancel", []string{"work=spawn", "for=5s", "background=0.6", "answer-cancel"}, true, 0, assertions.Warn, "the cancelled request was answered"},
		// The same background does not hide work that goes on where the
		// strong evidence shows it: a process left running.
		{"background CPU, spawns, ignores cancel", []string{"work=spawn", "ignore-cancel", "for=5s", "background=0.6"}, true, 0, assertions.Fail, "processes it started for the call are still running"},
	}
	// The criteria mostly wait (the watch after the cancel): run them side
	// by side, more than go test's -parallel would, and judge them as
	// subtests afterwards.
	reports := make([]*assertions.Report, len(tests))
	concurrently(len(tests), func(i int) {
		tt := tests[i]
		if tt.child && !linux && tt.want == assertions.Pass {
			return
		}
		cfg := quietConfig()
		cfg.SlowDuration = tt.slowFor
		reports[i] = assertions.CheckServer(t.Context(), quiet(tt.child, tt.args...), cfg)
	})
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := reports[i]
			if rep == nil {
				t.Skip("CPU time and child processes are read from /proc: Linux only")
			}
			if len(rep.Results) != 1 {
				t.Fatalf("%d results, want 1:\n%s", len(rep.Results), rep)
			}
			res := rep.Results[0]
			if res.Verdict != tt.want || !strings.Contains(res.Evidence, tt.evidence) {
				t.Errorf("cancel-during-work = %s (%s), want %s with %q", res.Verdict, res.Evidence, tt.want, tt.evidence)
			}
		})
	}
}

// concurrently runs f(0), …, f(n-1) side by side and waits for them all.
// Only the test goroutine reports: f stores what it saw.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

// TestCancelBeforeWorkEvidence: the early cancel is judged by what the same
// call shows when left to work.
func TestCancelBeforeWorkEvidence(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("CPU time is read from /proc: Linux only")
	}
	tests := []struct {
		args []string
		want assertions.Verdict
	}{
		{[]string{"work=burn", "for=5s"}, assertions.Pass},
		{[]string{"work=burn", "ignore-cancel", "for=5s"}, assertions.Fail},
		// The background of a language server indexing, and an answer to
		// the cancel: a warning, not a failure (its CPU is its own).
		{[]string{"work=sleep", "for=5s", "background=0.6", "answer-cancel"}, assertions.Warn},
		{[]string{"work=spawn", "ignore-cancel", "for=5s", "background=0.6"}, assertions.Fail},
	}
	reports := make([]*assertions.Report, len(tests))
	concurrently(len(tests), func(i int) {
		cfg := quietConfig()
		cfg.Run = regexp.MustCompile(`^cancel-before-work$`)
		reports[i] = assertions.CheckServer(t.Context(), quiet(true, tests[i].args...), cfg)
	})
	for i, tt := range tests {
		if got := reports[i].Verdicts()["cancel-before-work"]; got != tt.want {
			t.Errorf("%q: cancel-before-work = %s, want %s\n%s", tt.args, got, tt.want, reports[i])
		}
	}
}

// TestBackgroundNeverPassesWorkGoingOn: a call that burns a CPU after its
// cancel, on a server that burns 60% of one of its own, is never said to
// have stopped: its work is seen going on (a failure) or, where a loaded
// machine's noise hides it in the background, unverified (a warning).
func TestBackgroundNeverPassesWorkGoingOn(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("CPU time is read from /proc: Linux only")
	}
	cfg := quietConfig()
	cfg.Run = regexp.MustCompile(`^cancel-(before|during)-work$`)
	rep := assertions.CheckServer(t.Context(), quiet(true, "work=burn", "ignore-cancel", "for=5s", "background=0.6"), cfg)
	for name, v := range rep.Verdicts() {
		if v == assertions.Pass || v == assertions.Skip {
			t.Errorf("%s = %s, want fail or warn\n%s", name, v, rep)
		}
	}
	if len(rep.Verdicts()) != 2 {
		t.Errorf("%d verdicts, want 2\n%s", len(rep.Verdicts()), rep)
	}
}

// TestInvalidJSONSameRead: a server that drops the rest of a read after an
// invalid line loses the request written behind it; the criterion sees it
// (a failure as a child; in-process, where only the bound tells, a warning
// that says unverified).
func TestInvalidJSONSameRead(t *testing.T) {
	t.Parallel()
	cfg := quietConfig()
	cfg.Run = regexp.MustCompile(`^invalid-json-input$`)
	cfg.Within = time.Second
	tests := []struct {
		args []string
		want assertions.Verdict
	}{{nil, assertions.Pass}, {[]string{"drop-after-bad"}, assertions.Fail}}
	var reports [2][2]*assertions.Report // by way, by row
	concurrently(2*len(tests), func(i int) {
		reports[i/2][i%2] = assertions.CheckServer(t.Context(), quiet(i/2 == 1, tests[i%2].args...), cfg)
	})
	testkit.EachWay(t, func(t *testing.T, child bool) {
		for i, tt := range tests {
			rep := reports[0][i]
			if child {
				rep = reports[1][i]
			}
			res := rep.Results[0]
			want := tt.want
			if want == assertions.Fail && !child {
				// In-process, the lost request is a bound that ran out
				// with no view of the server's threads: unverified.
				want = assertions.Warn
			}
			// Depending on what the server's read held, the request behind
			// the invalid line or the next one is lost: either way the
			// verdict names the write that held both.
			if res.Verdict != want || tt.want == assertions.Fail && !strings.Contains(res.Evidence, "in one write") && !strings.Contains(res.Evidence, "same write as an invalid JSON line") {
				t.Errorf("%q: invalid-json-input = %s (%s), want %s", tt.args, res.Verdict, res.Evidence, want)
			}
		}
	})
}

// TestInvalidJSONAnswerWithoutID: an error answer without an id (JSON-RPC's
// answer when the id could not be read) is an answer, and the evidence says
// what came.
func TestInvalidJSONAnswerWithoutID(t *testing.T) {
	t.Parallel()
	cfg := quietConfig()
	cfg.Run = regexp.MustCompile(`^invalid-json-input$`)
	res := assertions.CheckServer(t.Context(), quiet(false, "answer-bad"), cfg).Results[0]
	if res.Verdict != assertions.Pass || !strings.Contains(res.Evidence, `answered with 2 error response(s) (-32700 "Parse error", no id;`) {
		t.Errorf("invalid-json-input = %s (%s), want a pass naming the two id-less -32700 answers", res.Verdict, res.Evidence)
	}
}

// TestReadsWhileBlockedSlowReader: a server that keeps reading stdin while
// its stdout is blocked, but slowly, is slow and not stopped: a pass when
// the flood fits the cap (6×Within), else a warning with the rate and what
// the bound would need.
func TestReadsWhileBlockedSlowReader(t *testing.T) {
	t.Parallel()
	// within bounds every step; 6×within caps the flood. A short one would
	// fail the other steps on a loaded machine: the slow row reads so
	// slowly that its flood outlasts a cap of 6s (12 KiB/s: ~14s).
	tests := []struct {
		kibs   int
		within time.Duration
		want   assertions.Verdict
		text   string
	}{
		{12, time.Second, assertions.Warn, `^slow, not stopped: the server takes stdin at [\d.]+ KB/s while its stdout is blocked .* the flood needs .*raise Within to about`},
		{1024, 2 * time.Second, assertions.Pass, `were read from stdin`},
	}
	results := make([]assertions.Result, len(tests))
	concurrently(len(tests), func(i int) {
		cfg := quietConfig()
		cfg.Run = regexp.MustCompile(`^reads-while-blocked$`)
		cfg.Within = tests[i].within
		results[i] = assertions.CheckServer(t.Context(), quiet(false, "async", fmt.Sprintf("slow-read=%d", tests[i].kibs)), cfg).Results[0]
	})
	for i, tt := range tests {
		if res := results[i]; res.Verdict != tt.want || !regexp.MustCompile(tt.text).MatchString(res.Evidence) {
			t.Errorf("reading stdin at %d KiB/s: reads-while-blocked = %s (%s), want %s matching %q", tt.kibs, res.Verdict, res.Evidence, tt.want, tt.text)
		}
	}
}

// TestFloodTooMuchAtAll: a flood the server cannot take even with the host
// reading all the time is not blamed on back-pressure: a skip that says so
// and asks for a cheaper call.
func TestFloodTooMuchAtAll(t *testing.T) {
	t.Parallel()
	cfg := quietConfig()
	cfg.Run = regexp.MustCompile(`^reads-while-blocked$`)
	cfg.Within = time.Second
	res := assertions.CheckServer(t.Context(), quiet(true, "async", "exit-after=100"), cfg).Results[0]
	if res.Verdict != assertions.Skip || !strings.Contains(res.Evidence, "the server cannot take this flood at all") || !strings.Contains(res.Evidence, "cheaper") {
		t.Errorf("reads-while-blocked = %s (%s), want a skip saying the server cannot take this flood at all", res.Verdict, res.Evidence)
	}
}

// TestOversizedSlowReader: a server still reading when the bound runs out
// is slow, not stopped: the criterion goes on up to 6 times the bound, then
// warns with the rate and what the line needs.
func TestOversizedSlowReader(t *testing.T) {
	t.Parallel()
	cfg := quietConfig()
	cfg.Run = regexp.MustCompile(`^oversized-input$`)
	cfg.OversizedRequest = 2 << 20
	cfg.Within = 250 * time.Millisecond // 0.25s + 2×250ms: a cap of 4.5s; 2 MiB at 128 KiB/s takes 16s
	rep := assertions.CheckServer(t.Context(), quiet(false, "slow-read=128"), cfg)
	res := rep.Results[0]
	if res.Verdict != assertions.Warn || !regexp.MustCompile(`^slow, not stopped: still reading the 2097152-byte request line at \d+ KiB/s after .* past the cap of 6×750ms; the line needs`).MatchString(res.Evidence) {
		t.Errorf("oversized-input against a slow reader = %s (%s), want a warning saying it was still reading, at what rate", res.Verdict, res.Evidence)
	}
}

// TestCancelAfterOutputCountsItsResponse: log notifications before the
// response are not bytes of the response, and a response whose id comes
// last (the TypeScript SDK's key order) is held by its bytes all the same:
// the cancel comes CancelAfter bytes into the response itself. A response
// shorter than that is a skip that names its size.
func TestCancelAfterOutputCountsItsResponse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args  []string
		bytes int
		want  assertions.Verdict
		text  string
	}{
		{[]string{"chatty"}, 256 << 10, assertions.Pass, `cancelled 327\d\d bytes into its response \(held mid-frame while cancelled`},
		{[]string{"id-last"}, 256 << 10, assertions.Pass, `cancelled 327\d\d bytes into its response \(held mid-frame while cancelled`},
		{[]string{"chatty", "id-last"}, 256 << 10, assertions.Pass, `cancelled 327\d\d bytes into its response \(held mid-frame while cancelled`},
		{[]string{"id-last"}, 20 << 10, assertions.Skip, "the Large call's response was only 20"},
	} {
		cfg := quietConfig()
		cfg.Run = regexp.MustCompile(`^cancel-after-output-began$`)
		cfg.Large = &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": tt.bytes}}
		testkit.EachWay(t, func(t *testing.T, child bool) {
			rep := assertions.CheckServer(t.Context(), quiet(child, tt.args...), cfg)
			res := rep.Results[0]
			if res.Verdict != tt.want || !regexp.MustCompile(tt.text).MatchString(res.Evidence) {
				t.Errorf("%q, %d bytes: cancel-after-output-began = %s (%s), want %s with %q", tt.args, tt.bytes, res.Verdict, res.Evidence, tt.want, tt.text)
			}
		})
	}
}

// TestExpect: an expected verdict is accepted, a changed one must be
// updated, an unknown name is an error.
func TestExpect(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig()
	cfg.Run = regexp.MustCompile(`^(stdout-clean|era)$`)
	banner := target(t, false, "-banner", "hello")
	cfg.Expect = map[string]assertions.Verdict{"stdout-clean": assertions.Fail}
	if err := assertions.CheckServer(t.Context(), banner, cfg).Err(); err != nil {
		t.Errorf("an expected failure: Err() = %v, want nil", err)
	}
	good := target(t, false)
	err := assertions.CheckServer(t.Context(), good, cfg).Err()
	if err == nil || !strings.Contains(err.Error(), "update Expect") {
		t.Errorf("an expected failure that now passes: Err() = %v, want update Expect", err)
	}
	cfg.Expect = map[string]assertions.Verdict{"no-such-criterion": assertions.Fail}
	if err := assertions.CheckServer(t.Context(), good, cfg).Err(); err == nil || !strings.Contains(err.Error(), "no-such-criterion") {
		t.Errorf("Expect naming no criterion: Err() = %v, want an error naming it", err)
	}
	var rep assertions.Report
	if errors.Is(rep.Err(), nil) != true {
		t.Error("an empty report has an error")
	}
	// An expected warn that came out skip is stale too, and the text says
	// so where a person reads it: the criterion's line and the summary.
	rep.Results = []assertions.Result{{Name: "result-bounded", Verdict: assertions.Skip, Expected: assertions.Warn, Evidence: "no Bounded call"}, {Name: "era", Verdict: assertions.Pass}}
	if rep.Err() == nil || !strings.Contains(rep.Results[0].Line(), "expected warn, got skip: update Expect; no Bounded call") ||
		!strings.HasSuffix(rep.Summary(), "; 1 expectation failed (result-bounded): update Expect") {
		t.Errorf("an expected warn that came out skip: Err() = %v, line %q, summary %q; want an error, and both to say so", rep.Err(), rep.Results[0].Line(), rep.Summary())
	}
}

// TestEOFDrainsRepeated: a drop at stdin's end is a race, so
// eof-drains-pending looks again in fresh sessions and fails at the first
// drop, saying how many sessions it took. Here the fake drops from its
// fourth session on: the battery's first start, the criterion's own
// session and one fresh one answer all, the criterion's third drops.
func TestEOFDrainsRepeated(t *testing.T) {
	t.Parallel()
	var sessions atomic.Int32
	serve := func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		var args []string
		if sessions.Add(1) >= 4 {
			args = append(args, "-drop-pending-at-eof")
		}
		return serveFake(args)(ctx, stdin, stdout, stderr)
	}
	cfg := fakeConfig()
	cfg.Run = regexp.MustCompile(`^eof-drains-pending$`)
	rep := assertions.CheckServer(t.Context(), mcptest.InProcess(serve), cfg)
	res := rep.Results[len(rep.Results)-1]
	if res.Verdict != assertions.Fail || !strings.HasPrefix(res.Evidence, "1 of 3 sessions dropped requests: ") {
		t.Errorf("eof-drains-pending of a server that drops in its third session = %s (%s), want fail, \"1 of 3 sessions dropped requests: \"", res.Verdict, res.Evidence)
	}
	good := assertions.CheckServer(t.Context(), target(t, false), cfg).Results
	if res := good[len(good)-1]; res.Verdict != assertions.Pass || !regexp.MustCompile(`answered in each of [2-8] sessions`).MatchString(res.Evidence) {
		t.Errorf("eof-drains-pending of the fake = %s (%s), want pass in more than one session", res.Verdict, res.Evidence)
	}
}

// TestForcedEndOnItsOwnLine: a server that does not exit when its stdin
// closes and ends on a signal (SIGTERM, exit code 0) is said so on the line
// of the criterion whose server it was, in those words, and not on the next
// one (which hears only of a kill).
func TestForcedEndOnItsOwnLine(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig()
	cfg.ShutdownGrace = 500 * time.Millisecond
	cfg.Run = regexp.MustCompile(`^(stdout-clean|era)$`)
	rep := assertions.CheckServer(t.Context(), target(t, true, "-ignore-eof"), cfg)
	if len(rep.Results) != 2 {
		t.Fatalf("ran %d criteria, want 2:\n%s", len(rep.Results), rep)
	}
	// SIGTERM ends the fake with exit code 0; a loaded machine may take
	// longer than the grace, and the next signal ends it.
	said := regexp.MustCompile(`\[at the end of this criterion, it did not exit within the grace after stdin closed; SIG[A-Z]+ ended it \((exit code \d+|killed by \w+)\)\]$`)
	for _, res := range rep.Results {
		if !said.MatchString(res.Evidence) || strings.Contains(res.Evidence, "previous criterion") {
			t.Errorf("%s: evidence %q, want %q and nothing of the previous criterion", res.Name, res.Evidence, said)
		}
	}
}
