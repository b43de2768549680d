package assertions_test

import (
	"cmp"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// fakeConfig names the fake's tools for the server criteria, sized so the
// battery is quick: 16 KiB pipes make a 256 KiB response block the writer.
func fakeConfig() assertions.ServerConfig {
	return assertions.ServerConfig{
		Large: &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}},
		// Progress every 50ms, not 10: a loaded machine delays the host's
		// reads by more than the grace, and two notifications written
		// before the cancel then arrive after it (cancel-during-work of
		// the good fake at load 4-14: "2 progress notifications arrived
		// 200ms–1.2s after the cancel").
		Slow:             &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 50}},
		Bounded:          &assertions.ToolCall{Name: "search", Arguments: map[string]any{"query": "q", "total": 5000}},
		OversizedRequest: 1 << 20, // the criterion's logic at any size; small for -race
		// The default grace: a loaded machine delays the fake's reading
		// of a cancel by more than 100ms.
		CancelGrace: 200 * time.Millisecond,
	}
}

// target returns the fake configured by args, as a child (childFake) or
// in-process.
func target(tb testing.TB, child bool, args ...string) mcptest.Target {
	if child {
		return childFake(tb, args...)
	}
	return mcptest.InProcess(serveFake(args))
}

// way names a way of running the fake, as testkit.EachWay's subtests do.
func way(child bool) string {
	if child {
		return testkit.Ways[1]
	}
	return testkit.Ways[0]
}

// allPass is every criterion passing, SIGTERM skipped for in-process.
func allPass(path string) map[string]assertions.Verdict {
	want := map[string]assertions.Verdict{}
	for _, n := range assertions.ServerCriterionNames() {
		want[n] = assertions.Pass
	}
	if path == "in-process" {
		want["shutdown-sigterm"] = assertions.Skip
	}
	return want
}

func with(m map[string]assertions.Verdict, changes ...any) map[string]assertions.Verdict {
	for i := 0; i < len(changes); i += 2 {
		m[changes[i].(string)] = changes[i+1].(assertions.Verdict)
	}
	return m
}

// TestCheckServerVerdicts runs the battery against the good fake and the
// naive configurations and checks each criterion's verdict: the good fake
// passes everything, each fault fails exactly the criteria that catch it.
func TestCheckServerVerdicts(t *testing.T) {
	// within bounds each step: a row whose criteria fail by waiting out a
	// bound gets a short one, the others the default (passing steps never
	// wait it out). grace is the shutdown grace, also how long each
	// criterion's server gets to exit on stdin EOF before signals.
	//
	// run, if set, selects the criteria of a row: the naive loop's are
	// split in batteries that run side by side, the one it fails by a
	// bound (with the short one), each cancel criterion (whose servers,
	// stuck in the loop, get a short grace), its shutdown (the default
	// grace: a loaded machine may take more than 200ms to end a process)
	// and those it passes (the default bound: the one after a 1 MB request
	// line is slow to come from an in-process naive server on a loaded
	// machine under the race detector).
	tests := []struct {
		name   string
		args   []string
		within time.Duration
		grace  time.Duration
		want   func(path string) map[string]assertions.Verdict
		run    string
	}{
		{"good", nil, 0, 0, allPass, ""},
		{"naive loop", []string{"-naive"}, 2 * time.Second, 0, func(p string) map[string]assertions.Verdict {
			// Reads stdin only between writes: a blocked stdout stops its
			// reader.
			return with(allPass(p), "reads-while-blocked", assertions.Fail)
		}, "^reads-while-blocked$"},
		{"naive loop, what it passes", []string{"-naive"}, 0, 0, allPass, "^(stdout-clean|invalid-json-input|oversized-input|stall-cancel-recover|result-bounded|era)$"},
		{"naive loop, cancel before work", []string{"-naive"}, 2 * time.Second, 200 * time.Millisecond, func(p string) map[string]assertions.Verdict {
			// A long tool call keeps cancels unread.
			return with(allPass(p), "cancel-before-work", assertions.Fail)
		}, "^cancel-before-work$"},
		{"naive loop, cancel during work", []string{"-naive"}, 2 * time.Second, 200 * time.Millisecond, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "cancel-during-work", assertions.Fail)
		}, "^cancel-during-work$"},
		{"naive loop, shutdown", []string{"-naive"}, 2 * time.Second, 0, allPass, "^shutdown-"},
		{"ignore cancel", []string{"-ignore-cancel"}, 0, 0, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "cancel-before-work", assertions.Fail, "cancel-during-work", assertions.Fail)
		}, ""},
		{"unbounded results", []string{"-unbounded"}, 0, 0, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "result-bounded", assertions.Fail)
		}, ""},
		{"banner on stdout", []string{"-banner", "fakeserver starting"}, 0, 0, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "stdout-clean", assertions.Fail)
		}, ""},
		{"response after cancel, modern", []string{"-respond-after-cancel"}, 0, 0, func(p string) map[string]assertions.Verdict {
			// A MUST NOT on the 2026-07-28 stdio transport, yet the work
			// stopped: the specification allows the race (warn, with both
			// facts).
			return with(allPass(p), "cancel-before-work", assertions.Warn, "cancel-during-work", assertions.Warn)
		}, ""},
		{"response after cancel, legacy", []string{"-respond-after-cancel", "-era", "legacy"}, 0, 0, func(p string) map[string]assertions.Verdict {
			// Only a SHOULD NOT in 2025-11-25.
			return with(allPass(p), "cancel-before-work", assertions.Warn, "cancel-during-work", assertions.Warn)
		}, ""},
		{"server request on stdout, modern", []string{"-server-request-after", "2"}, 0, 0, func(p string) map[string]assertions.Verdict {
			// The 2026-07-28 stdio transport forbids requests from the
			// server; the fake sends one right after the second message.
			return with(allPass(p), "stdout-clean", assertions.Fail, "era", assertions.Fail)
		}, ""},
		{"server request on stdout, legacy", []string{"-server-request-after", "2", "-era", "legacy"}, 0, 0, allPass, ""},
		{"drops pending requests at EOF", []string{"-drop-pending-at-eof"}, 0, 0, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "eof-drains-pending", assertions.Fail)
		}, "^eof-drains-pending$"},
		{"ends unless initialize comes first", []string{"-end-unless-initialize"}, 0, 0, allPass, ""},
		{"ignores stdin EOF and SIGTERM", []string{"-ignore-eof", "-ignore-sigterm"}, 0, 50 * time.Millisecond, func(p string) map[string]assertions.Verdict {
			// Nothing ends it when its host goes away: the broken pipe
			// fails its write, and it ignores the rest.
			m := with(allPass(p), "shutdown-stdin-eof", assertions.Warn, "host-gone", assertions.Fail)
			if p == "child" {
				m["shutdown-sigterm"] = assertions.Warn
			}
			return m
		}, ""},
		{"crashes when its host goes away", []string{"-crash-on-broken-pipe"}, 0, 0, func(p string) map[string]assertions.Verdict {
			if p == "child" {
				return with(allPass(p), "host-gone", assertions.Fail)
			}
			return allPass(p) // the fault needs the process's own stdout
		}, "^host-gone$"},
		{"ends at a CRLF line", []string{"-end-on-crlf"}, 0, 0, func(p string) map[string]assertions.Verdict {
			return with(allPass(p), "crlf-input", assertions.Fail)
		}, "^crlf-input$"},
	}
	// The batteries mostly wait (observation windows, bounds running
	// out): run them side by side, more than go test's -parallel (the
	// number of CPUs) would, and compare as subtests afterwards.
	t.Parallel()
	target(t, true) // under the race detector, built here, on the test's goroutine: a failed build fails the test
	reports := make([][2]*assertions.Report, len(tests))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 12)
	for i, tt := range tests {
		for w, child := range []bool{false, true} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				cfg := fakeConfig()
				cfg.Within = tt.within
				cfg.ShutdownGrace = cmp.Or(tt.grace, time.Second)
				if tt.run != "" {
					cfg.Run = regexp.MustCompile(tt.run)
				}
				reports[i][w] = assertions.CheckServer(t.Context(), target(t, child, tt.args...), cfg)
			}()
		}
	}
	wg.Wait()
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testkit.EachWay(t, func(t *testing.T, child bool) {
				path, rep := way(child), reports[i][0]
				if child {
					rep = reports[i][1]
				}
				want := tt.want(path)
				if tt.run != "" {
					maps.DeleteFunc(want, func(name string, _ assertions.Verdict) bool { return !regexp.MustCompile(tt.run).MatchString(name) })
				}
				if diff := gocmp.Diff(want, rep.Verdicts()); diff != "" {
					t.Errorf("CheckServer(%s %q) verdicts mismatch (-want +got):\n%s\nreport:\n%s", path, tt.args, diff, rep)
				}
				for _, res := range rep.Results {
					if res.Name == "era" && slices.Contains(tt.args, "-end-unless-initialize") && !strings.Contains(res.Evidence, "started again, it negotiated with initialize") {
						t.Errorf("era evidence %q does not say the server was started again after the probe ended it", res.Evidence)
					}
					if res.Evidence == "" || res.Rule == "" {
						t.Errorf("%s: %s without evidence or rule: %+v", res.Name, res.Verdict, res)
					}
				}
			})
		})
	}
}

// TestServerCriteria runs part of the battery as subtests against the good
// fake (TestCheckServerVerdicts runs all of it).
func TestServerCriteria(t *testing.T) {
	cfg := fakeConfig()
	cfg.Run = regexp.MustCompile(`^(stdout-clean|stall-cancel-recover|shutdown-sigterm)$`)
	testkit.EachWay(t, func(t *testing.T, child bool) {
		assertions.ServerCriteria(t, target(t, child), cfg)
	})
}

// TestLargeCallTooSmall: a "Large" response that merely fills most of the
// pipe looks like a blocked writer to the fill level; the criteria must see
// through it rather than pass having proved nothing.
func TestLargeCallTooSmall(t *testing.T) {
	cfg := fakeConfig()
	cfg.Large = &assertions.ToolCall{Name: "big", Arguments: map[string]any{"frameSize": 15000}} // < 16 KiB pipe
	cfg.Within = 2 * time.Second
	cfg.Run = regexp.MustCompile(`^(reads-while-blocked|stall-cancel-recover)$`)
	testkit.EachWay(t, func(t *testing.T, child bool) {
		rep := assertions.CheckServer(t.Context(), target(t, child), cfg)
		for _, res := range rep.Results {
			if res.Verdict != assertions.Fail {
				t.Errorf("%s with a 15000-byte Large response: %s (%s), want fail", res.Name, res.Verdict, res.Evidence)
			}
		}
		if len(rep.Results) != 2 {
			t.Errorf("ran %d criteria, want 2", len(rep.Results))
		}
	})
}

// TestServerNeverStarts: a command that is not a server fails "start"
// once, with its rule, and no criterion runs.
func TestServerNeverStarts(t *testing.T) {
	t.Parallel()
	cfg := fakeConfig()
	cfg.StartTimeout = 2 * time.Second
	rep := assertions.CheckServer(t.Context(), mcptest.Command("true"), cfg)
	if len(rep.Results) != 1 || rep.Results[0].Name != "start" || rep.Results[0].Verdict != assertions.Fail || rep.Results[0].Rule == "" {
		t.Errorf("CheckServer(true): want one failed start result with its rule, got:\n%s", rep)
	}
}
