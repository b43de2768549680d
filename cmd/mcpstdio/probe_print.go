package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"unicode"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/term"
)

// printer prints what a person reads: the heading, the results as they
// come, the summary. Beside it, on a terminal, a live status line shows the
// criterion running.
type printer struct {
	w       io.Writer
	verbose bool
	ctx     context.Context // once it is done, results are cut short: not shown
	live    *liveStatus     // nil unless stderr is a terminal

	subject string
	shown   int      // results of the current report shown
	pending []string // criteria of the current report not reported yet, in the order they run
}

// newPrinter prints to stdout, or to stderr with -json; the live status
// goes to stderr if it is a terminal.
func newPrinter(ctx context.Context, stdout, stderr io.Writer, verbose, json bool) *printer {
	p := &printer{w: stdout, verbose: verbose, ctx: ctx}
	if json {
		p.w = stderr
	}
	if file, ok := stderr.(*os.File); ok {
		if width, ok := terminalWidth(file); ok {
			p.live = startLiveStatus(stderr, width, statusEvery)
		}
	}
	return p
}

// begin starts a report: the criteria of names that run selects are
// pending, and the server is being started.
func (p *printer) begin(subject string, names []string, run *regexp.Regexp) {
	p.subject, p.shown, p.pending = subject, 0, nil
	for _, name := range names {
		if run == nil || run.MatchString(name) {
			p.pending = append(p.pending, name)
		}
	}
	p.live.show("(starting the server)")
}

// heading prints the report's first line, before its first criterion's.
func (p *printer) heading() {
	fmt.Fprintln(p.w, term.Line(p.subject))
}

// next shows the criterion that runs next in the live status.
func (p *printer) next() {
	if len(p.pending) > 0 {
		p.live.show(p.pending[0])
	}
}

func (p *printer) result(res assertions.Result) {
	if p.ctx.Err() != nil {
		return
	}
	p.live.pause()
	if res.Name == resultStart {
		// The battery's first start: a failure is probe's to say.
		if res.Verdict == assertions.Pass {
			p.heading()
			if p.verbose {
				fmt.Fprintf(p.w, "        %s\n", term.Line(res.Evidence))
			}
			p.next()
		}
		return
	}
	p.shown++
	if len(p.pending) > 0 && p.pending[0] == res.Name {
		p.pending = p.pending[1:]
	}
	fmt.Fprintln(p.w, term.Line(cliLine(res).Line())) // the evidence quotes the server: one line, nothing raw
	if p.verbose {
		if res.Rule != "" {
			fmt.Fprintf(p.w, "        rule: %s\n", term.Line(res.Rule))
		}
		if res.Era != "" {
			fmt.Fprintf(p.w, "        protocol: %s\n", term.Line(res.Era))
		}
		if d := strings.TrimSpace(res.Details); d != "" {
			fmt.Fprintln(p.w, indent(term.Block(d)))
		}
	}
	p.next()
}

// summary prints the report's summary line, which counts the verdicts
// other than -expect's apart from the criteria.
func (p *printer) summary(rep *assertions.Report) {
	shown := *rep
	shown.Results = nil
	var stale []string
	for _, res := range rep.Results {
		if res.Unexpected() {
			stale = append(stale, res.Name)
		}
		shown.Results = append(shown.Results, cliLine(res))
	}
	line := shown.Summary()
	if len(stale) > 0 {
		s := "s"
		if len(stale) == 1 {
			s = ""
		}
		line += fmt.Sprintf("; %d expectation%s failed (%s): update -expect", len(stale), s, strings.Join(stale, ", "))
	}
	fmt.Fprintln(p.w, term.Line(line))
}

// cliLine is res as the text output shows it: a verdict other than
// -expect's says so first, in the flag's words.
func cliLine(res assertions.Result) assertions.Result {
	if res.Unexpected() {
		res.Evidence = fmt.Sprintf("expected %s, got %s: update -expect; %s", res.Expected, res.Verdict, res.Evidence)
		res.Expected = ""
	}
	return res
}

// close erases the live status and stops it.
func (p *printer) close() { p.live.close() }

func indent(s string) string {
	s = strings.TrimRight(s, "\n ")
	return "        " + strings.ReplaceAll(s, "\n", "\n        ")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

// shellQuote writes argv as a shell would need it typed: arguments with
// characters other than letters, digits and -_./:=@%+, in single quotes.
func shellQuote(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		plain := a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_./:=@%+,", r)))
		}) < 0
		if plain {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
