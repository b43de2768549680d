package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// demoFake is one configuration of the built-in fake that probe runs
// without a server command, with the criteria it is expected to fail.
type demoFake struct {
	name  string
	args  []string // fake flags
	fails []string
}

var demoFakes = []demoFake{
	{name: "good"},
	// Reads stdin only between writes: a blocked stdout stops its reader,
	// and a long tool call keeps cancellations unread.
	{name: "naive", args: []string{"-naive"}, fails: []string{"reads-while-blocked", "cancel-before-work", "cancel-during-work"}},
}

// demoConfig presets the tool calls of the fake, sized so the whole run
// takes seconds: with 16 KiB pipes a 256 KiB response blocks the writer,
// each step is bounded by 2s, so the naive fake's unread stdin fails
// quickly, and a server stuck in its naive loop gets 500ms to exit on stdin
// EOF before it is sent signals. Flags the user gave win.
func demoConfig(cfg assertions.ServerConfig) assertions.ServerConfig {
	if cfg.Within == 0 {
		cfg.Within = 2 * time.Second
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 500 * time.Millisecond
	}
	if cfg.Large == nil {
		cfg.Large = &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 256 << 10}}
	}
	if cfg.Slow == nil {
		cfg.Slow = &assertions.ToolCall{Name: "slow", Arguments: map[string]any{"steps": 100000, "intervalMs": 10}}
	}
	if cfg.Bounded == nil {
		cfg.Bounded = &assertions.ToolCall{Name: "search", Arguments: map[string]any{"query": "q", "total": 5000}}
	}
	if cfg.OversizedRequest == 0 {
		cfg.OversizedRequest = 4 << 20
	}
	return cfg
}

// runDemo runs the criteria against the fake, good and naive, each a child
// process re-executing this command as "mcpstdio fake", and returns the
// exit status. Each report holds the fake's expected verdicts (Expect), so
// it passes when the fake behaved as expected.
func runDemo(ctx context.Context, cfg assertions.ServerConfig, out *output, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio probe: cannot find this program to run it as the fake server: %v\n", err)
		return 1
	}
	cfg = demoConfig(cfg)
	p := out.p
	fmt.Fprintln(p.w, "No server command: probing the built-in fake server, first correct, then with its naive loop.")
	fmt.Fprintln(p.w, "(Probe your own server with: mcpstdio probe [flags] -- <server command...>)")
	var unexpected []string
	for _, fake := range demoFakes {
		fmt.Fprintf(p.w, "\n== %s fake\n", fake.name)
		cfg.Expect = expected(fake)
		rep, err := probeAs(ctx, append([]string{exe, "fake"}, fake.args...), append([]string{"mcpstdio", "fake"}, fake.args...), cfg, p)
		out.add(rep)
		if err != nil {
			fmt.Fprintf(stderr, "mcpstdio probe: %s fake: %v\n", fake.name, err)
			return 1
		}
		for _, res := range rep.Results {
			if res.Err() != nil {
				unexpected = append(unexpected, fmt.Sprintf("%s fake: %s: got %s, want %s", fake.name, res.Name, res.Verdict, res.Expected))
			}
		}
	}
	if len(unexpected) > 0 {
		fmt.Fprintln(p.w)
		fmt.Fprintln(p.w, "NOT as expected:")
		for _, u := range unexpected {
			fmt.Fprintf(p.w, "  %s\n", u)
		}
		return 1
	}
	fmt.Fprintln(p.w, "\nAs expected: "+expectedSummary(cfg))
	return 0
}

// expected returns the verdict each criterion should have for fake.
func expected(fake demoFake) map[string]assertions.Verdict {
	want := map[string]assertions.Verdict{}
	for _, name := range assertions.ServerCriterionNames() {
		want[name] = assertions.Pass
		if slices.Contains(fake.fails, name) {
			want[name] = assertions.Fail
		}
	}
	return want
}

// expectedSummary says what the run showed, for the selected criteria.
func expectedSummary(cfg assertions.ServerConfig) string {
	var fails []string
	for _, name := range assertions.ServerCriterionNames() {
		if (cfg.Run == nil || cfg.Run.MatchString(name)) && slices.Contains(demoFakes[1].fails, name) {
			fails = append(fails, name)
		}
	}
	if len(fails) == 0 {
		return "both fakes passed the selected criteria."
	}
	return fmt.Sprintf(`the good fake passed every criterion; the naive fake failed %s and passed the rest.
The naive fake reads stdin only between writes to stdout: while a large response is blocked
on a full pipe, neither new requests nor notifications/cancelled get through, and a long tool
call cannot be cancelled. To the user, the agent hangs.`, strings.Join(fails, ", "))
}
