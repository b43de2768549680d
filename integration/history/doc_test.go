package history_test

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

var update = flag.Bool("update", false, "rewrite docs/sdk-history.md from the pairs")

const docPath = "../../docs/sdk-history.md"

// sdkNames are the SDKs in the order of the document, with their titles.
var sdkNames = []struct{ key, title string }{
	{"go-sdk", "Official Go SDK (`github.com/modelcontextprotocol/go-sdk`)"},
	{"mcp-go", "mcp-go (`github.com/mark3labs/mcp-go`)"},
	{"ts-sdk", "Official TypeScript SDK (`@modelcontextprotocol/sdk`)"},
}

// verdictCell is a release's verdicts of criterion n, as the table shows.
func verdictCell(r release, n string) string {
	vs := make([]string, len(r.want[n]))
	for i, v := range r.want[n] {
		vs[i] = string(v)
		if v == fail {
			vs[i] = "**fail**"
		}
	}
	return fmt.Sprintf("%s: %s", r.label(), strings.Join(vs, " or "))
}

// renderDoc is docs/sdk-history.md, from pairs.
func renderDoc() string {
	var b strings.Builder
	b.WriteString(`# Which release fixed it

<!-- Generated from integration/history/pairs_test.go by ` + "`go test -run TestSDKHistoryDoc -update`" + ` in integration/history; TestSDKHistoryDoc checks it. -->

The criteria across releases of three MCP SDKs. For each stdio fix found in an SDK's history, the same small
server or client (integration/history: one per SDK, in Go built against each pinned release with its own
go.mod and go.sum, in TypeScript installed from a package-lock.json per release) was run through the server
criteria (` + "`mcpstdio probe`" + `'s battery) or the host criteria (` + "`mcpstdio hostprobe`" + `) on the last release
without the fix and on the first with it. The test (` + "`TestHistory`" + `) asserts both columns of every row, and that
the two releases differ on that criterion and on no other criterion it runs (save where a race in the SDK
allows two verdicts, shown as "warn or fail"). Verdicts read as in [criteria.md](criteria.md) and
[hosts.md](hosts.md); a flip from pass to fail is a fix that traded one behaviour for another, said in its note.

Run it with ` + "`cd integration && for d in history/ts/*/; do (cd $d && npm ci); done && go test ./history`" + `.
`)
	for _, sdk := range sdkNames {
		fmt.Fprintf(&b, "\n## %s\n\n", sdk.title)
		b.WriteString("| criterion | side | last without the fix | first with it | fix |\n|---|---|---|---|---|\n")
		var notes []string
		for _, p := range pairs {
			if p.before.sdk != sdk.key {
				continue
			}
			for _, n := range p.flips {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", n, p.before.side, verdictCell(p.before, n), verdictCell(p.after, n), p.fix)
			}
			flips := p.flips
			if p.raw != nil {
				fmt.Fprintf(&b, "| %s (%s) | %s | %s: %s | %s: %s | %s |\n", p.raw.name, p.raw.test, p.before.side, p.before.label(), p.raw.before, p.after.label(), p.raw.after, p.fix)
				flips = append(slices.Clone(flips), p.raw.name)
			}
			note := fmt.Sprintf("- %s %s → %s (%s): %s.", p.before.side, p.before.label(), p.after.label(), strings.Join(flips, ", "), p.bug)
			if p.note != "" {
				note += " " + p.note
			}
			notes = append(notes, note)
		}
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	b.WriteString(`
## Still failing in the latest release checked

Every criterion that fails (every time) in the newest release the pairs check, per SDK, side and package, side by side
with what is known upstream (the README's SDK table has the newest releases, go-sdk v1.8.0, mcp-go v1.6.0 and
` + "`@modelcontextprotocol/sdk`" + ` 1.32.2, the newest on the Go module proxy and npm on 2026-12-04).

| SDK | side | release | criterion | upstream |
|---|---|---|---|---|
`)
	latest := map[string]release{}
	for _, p := range pairs {
		for _, r := range []release{p.before, p.after} {
			k := r.sdk + " " + r.side + " " + r.pkg
			if l, ok := latest[k]; !ok || newer(r.version, l.version) {
				latest[k] = r
			}
		}
	}
	var keys []string
	for k := range latest {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		r := latest[k]
		for _, n := range r.names() {
			if r.want[n][0] == fail {
				fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.sdk, r.side, r.label(), n, upstream[r.sdk+" "+r.side+" "+n])
			}
		}
	}
	b.WriteString(`
Open bugs the criteria see that no pair above shows, each on the release it was checked on:

| SDK | side | release | criterion | verdict | upstream |
|---|---|---|---|---|---|
`)
	var notes []string
	for _, o := range openBugs {
		r := o.release
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", r.sdk, r.side, r.label(), o.criterion, verdictCell(r, o.criterion), o.link)
		notes = append(notes, fmt.Sprintf("- %s (%s %s %s, %s): %s. %s", o.criterion, r.sdk, r.side, r.label(), o.link, o.bug, o.note))
	}
	b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	b.WriteString(notPaired)
	return b.String()
}

// upstream says what is known upstream of a failure that stays.
var upstream = map[string]string{
	"go-sdk server invalid-json-input":    "the reader returns on the first decode error; no issue found",
	"go-sdk server eof-drains-pending":    "[#1061](https://github.com/modelcontextprotocol/go-sdk/issues/1061), open (fix [#1067](https://github.com/modelcontextprotocol/go-sdk/pull/1067) open)",
	"go-sdk server oversized-input":       "the 16 MiB limit ends the session (see above)",
	"go-sdk client invalid-json-response": "the client reads stdout as a JSON stream, not lines",
	"go-sdk client junk-on-stdout":        "the same",
	"mcp-go server reads-while-blocked":   "a full tools/call queue is handled on the read loop (the README's SDK table)",
	"mcp-go client stderr-noise":          "fixed in v1.0.0 (above)",
	"mcp-go client era-modern":            "the 2026-07-28 era came in v1.0.0",
	"ts-sdk server oversized-input":       "the 10 MiB limit closes the transport (see above)",
	"ts-sdk server host-gone":             "[#1564](https://github.com/modelcontextprotocol/typescript-sdk/issues/1564): fixed on the 2.x line; the 1.x backport, [#2579](https://github.com/modelcontextprotocol/typescript-sdk/pull/2579), is open",
	"ts-sdk client era-modern":            "1.x speaks only the initialize handshake",
}

// newer reports whether version a is after b, for the versions here
// (vX.Y.Z[-pre] or X.Y.Z).
func newer(a, b string) bool {
	parse := func(v string) (nums [3]int, pre string) {
		v = strings.TrimPrefix(v, "v")
		v, pre, _ = strings.Cut(v, "-")
		fmt.Sscanf(v, "%d.%d.%d", &nums[0], &nums[1], &nums[2])
		return nums, pre
	}
	na, pa := parse(a)
	nb, pb := parse(b)
	if c := slices.Compare(na[:], nb[:]); c != 0 {
		return c > 0
	}
	return pa == "" && pb != "" || pa != "" && pb != "" && pa > pb
}

// notPaired is what the history does not check, and why.
const notPaired = `
## Fixes not paired here

- go-sdk v1.0.0 → v1.1.0, the stdio transport closed stdout when its session ended, so a later write failed with "file already closed" ([#548](https://github.com/modelcontextprotocol/go-sdk/issues/548), [#562](https://github.com/modelcontextprotocol/go-sdk/pull/562)): no criterion can see it. The session ends at stdin's end, an invalid line or the host gone, and the server program then returns from ` + "`Server.Run`" + ` and exits: only a program that writes to stdout after its session could find it closed, and the host has stopped reading by then. Measured: v1.0.0 and v1.1.0 get the same verdicts on every server criterion (crlf-input, shutdown-stdin-eof, eof-drains-pending, host-gone among them).
- mcp-go v0.49.0 → v1.0.0-beta.1, a spurious "Error reading from stdout: read |0: file already closed" logged by a normal ` + "`Close`" + ` ([#862](https://github.com/mark3labs/mcp-go/issues/862), [#863](https://github.com/mark3labs/mcp-go/pull/863)): no criterion judges a host's log lines. The line goes to the client's logger when ` + "`cmd.Wait`" + ` closes the stdout pipe before the read loop sees its end; ` + "`Close`" + ` still returns nil and the host exits 0. By hand, 20 sessions of each against ` + "`mcpstdio fake`" + ` at a load average of 20: the line in none (3 of 20 in an earlier measurement): the race is too rare to assert either way.
- mcp-go v1.1.1 → v1.2.0, the client sends ` + "`notifications/cancelled`" + ` (in a goroutine): no verdict flips for sure. By hand (one run each), host-timeout was warn in both, for a host that exits right after the error loses the cancel, and late-after-cancel went from skip to pass, which needs the race won.
- mcp-go v1.1.0 → v1.1.1, requests handled off the read loop ([#976](https://github.com/mark3labs/mcp-go/issues/976), [#977](https://github.com/mark3labs/mcp-go/pull/977)): not measured here: reads-while-blocked floods tools/call, which goes to the worker queue in both, so it should not see the change.
- ` + "`@modelcontextprotocol/server`" + ` 2.0.0 → 2.1.0, stdin EOF ends the server ([#2002](https://github.com/modelcontextprotocol/typescript-sdk/issues/2002), still open on 1.x): not built here; a server shows it only while something else keeps node alive.
- ` + "`@modelcontextprotocol/sdk`" + ` 0.4.0 → 0.5.0 (cancellation, [#54](https://github.com/modelcontextprotocol/typescript-sdk/pull/54)) and 1.0.1 → 1.0.2 (the cancel's method name, [#76](https://github.com/modelcontextprotocol/typescript-sdk/pull/76)): not built here (an older API and protocol).
- ` + "`@modelcontextprotocol/sdk`" + ` 1.23.0 → 1.24.0, close ends stdin before SIGTERM ([#1200](https://github.com/modelcontextprotocol/typescript-sdk/pull/1200)): no criterion looks at the order.
- Open in 1.32.2, not seen by these runs: [#2552](https://github.com/modelcontextprotocol/typescript-sdk/pull/2552) (a send waits for ` + "`drain`" + ` forever when the server dies): no criterion kills a server while a large send to it is under way.
`

// TestSDKHistoryDoc checks docs/sdk-history.md against the pairs whose
// verdicts TestHistory asserts; -update rewrites it.
func TestSDKHistoryDoc(t *testing.T) {
	want := renderDoc()
	if *update {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("docs/sdk-history.md is not what the pairs say (-pairs +file; rewrite it with go test -run TestSDKHistoryDoc -update):\n%s", diff)
	}
}

// TestPairsFlip checks the table itself: each pair's releases run the same
// criteria, its flips have no verdict in common, and every other criterion
// has the same verdicts in both.
func TestPairsFlip(t *testing.T) {
	for _, p := range pairs {
		if !slices.Equal(p.before.names(), p.after.names()) {
			t.Errorf("%s: the releases run different criteria: %v, %v", p.name(), p.before.names(), p.after.names())
		}
		for _, n := range p.before.names() {
			b, a := p.before.want[n], p.after.want[n]
			shared := slices.ContainsFunc(b, func(v assertions.Verdict) bool { return slices.Contains(a, v) })
			if slices.Contains(p.flips, n) && shared {
				t.Errorf("%s: %s is a flip, but %v and %v share a verdict", p.name(), n, b, a)
			}
			if !slices.Contains(p.flips, n) && !shared {
				t.Errorf("%s: %s is not a flip, but %v and %v share no verdict", p.name(), n, b, a)
			}
		}
		if len(p.flips) == 0 && p.raw == nil {
			t.Errorf("%s: no flip", p.name())
		}
		if p.fix == "" || p.bug == "" {
			t.Errorf("%s: no fix or bug", p.name())
		}
	}
}
