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
	"github.com/mcpstdio/mcpstdio/mcptest"
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
// takes seconds: with 16 KiB pipes a 256 KiB response blocks the writer, and
// each step is bounded by 2s, so the naive fake's unread stdin fails
// quickly. Flags the user gave win.
func demoConfig(cfg assertions.ServerConfig) assertions.ServerConfig {
	if cfg.Within == 0 {
		cfg.Within = 2 * time.Second
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

// demoOutput is the JSON of a run against the fakes.
type demoOutput struct {
	Good       *assertions.Report `json:"good"`
	Naive      *assertions.Report `json:"naive"`
	AsExpected bool               `json:"as_expected"`
	Unexpected []string           `json:"unexpected,omitempty"` // "fake: criterion: got X, want Y"
	Error      string             `json:"error,omitempty"`
}

// runDemo runs the criteria against the fake, good and naive, each a child
// process re-executing this command as "mcpstdio fake".
func runDemo(ctx context.Context, f *probeFlags, cfg assertions.ServerConfig, stdout, stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio probe: cannot find this program to run it as the fake server: %v\n", err)
		return 1
	}
	cfg = demoConfig(cfg)
	p := &printer{w: stdout, verbose: f.verbose, ctx: ctx}
	if f.json {
		p.w = stderr
	}
	fmt.Fprintln(p.w, "No server command: probing the built-in fake server, first correct, then with its naive loop.")
	fmt.Fprintln(p.w, "(Probe your own server with: mcpstdio probe [flags] -- <server command...>)")
	var out demoOutput
	for _, fake := range demoFakes {
		fmt.Fprintf(p.w, "\n== %s fake\n", fake.name)
		rep, err := probe(ctx, mcptest.Command(exe, append([]string{"fake"}, fake.args...)...), cfg, p)
		if fake.name == "good" {
			out.Good = rep
		} else {
			out.Naive = rep
		}
		if err != nil {
			out.Error = fmt.Sprintf("%s fake: %v", fake.name, err)
			break
		}
		out.Unexpected = append(out.Unexpected, unexpected(fake, cfg, rep)...)
	}
	out.AsExpected = out.Error == "" && len(out.Unexpected) == 0
	if f.json {
		writeJSON(stdout, out)
	}
	switch {
	case out.Error != "":
		fmt.Fprintf(stderr, "mcpstdio probe: %s\n", out.Error)
		return 1
	case !out.AsExpected:
		fmt.Fprintln(p.w)
		fmt.Fprintln(p.w, "NOT as expected:")
		for _, u := range out.Unexpected {
			fmt.Fprintf(p.w, "  %s\n", u)
		}
		return 1
	}
	fmt.Fprintln(p.w, "\nAs expected: "+expectedSummary(cfg))
	return 0
}

// expected returns the verdict each selected criterion should have for
// fake.
func expected(fake demoFake, cfg assertions.ServerConfig) map[string]assertions.Verdict {
	want := map[string]assertions.Verdict{}
	for _, name := range assertions.ServerCriterionNames() {
		if cfg.Run != nil && !cfg.Run.MatchString(name) {
			continue
		}
		want[name] = assertions.Pass
		if slices.Contains(fake.fails, name) {
			want[name] = assertions.Fail
		}
	}
	return want
}

// unexpected lists the criteria whose verdict for fake is not the expected
// one.
func unexpected(fake demoFake, cfg assertions.ServerConfig, rep *assertions.Report) []string {
	want, got := expected(fake, cfg), rep.Verdicts()
	var diffs []string
	for _, name := range assertions.ServerCriterionNames() {
		w, inWant := want[name]
		g, inGot := got[name]
		if inWant != inGot || w != g {
			diffs = append(diffs, fmt.Sprintf("%s fake: %s: got %s, want %s", fake.name, name, orNone(g), orNone(w)))
		}
	}
	return diffs
}

func orNone(v assertions.Verdict) string {
	if v == "" {
		return "no result"
	}
	return string(v)
}

// expectedSummary says what the run showed, for the selected criteria.
func expectedSummary(cfg assertions.ServerConfig) string {
	var fails []string
	for name, v := range expected(demoFakes[1], cfg) {
		if v == assertions.Fail {
			fails = append(fails, name)
		}
	}
	if len(fails) == 0 {
		return "both fakes passed the selected criteria."
	}
	slices.SortFunc(fails, func(a, b string) int {
		return slices.Index(assertions.ServerCriterionNames(), a) - slices.Index(assertions.ServerCriterionNames(), b)
	})
	return fmt.Sprintf(`the good fake passed every criterion; the naive fake failed %s and passed the rest.
The naive fake reads stdin only between writes to stdout: while a large response is blocked
on a full pipe, neither new requests nor notifications/cancelled get through, and a long tool
call cannot be cancelled. To the user, the agent hangs.`, strings.Join(fails, ", "))
}
