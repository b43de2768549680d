package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/record"
)

// runStatus runs `mcpstdio status`: it reads the status files that running
// proxies rewrite every second and prints what each sees.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("mcpstdio status", flag.ContinueOnError)
	fset.SetOutput(stderr)
	searched := state.SearchDirs()
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "usage: mcpstdio status [-json] [-all] [-dir DIR] [-http [ADDR]] [STATUS FILE...]\n\nShows what each running mcpstdio proxy sees now: its pending requests with their ages,\nblocked directions, bytes waiting, and verdicts. It reads the status files the proxies\nrewrite about once a second, in %s unless -dir or files\nare given ($%s, when set, is read as well as the per-user directory: hosts may not pass\nit to servers). A status file whose proxy is gone (killed) is stale: -all shows it; a day after its last\nupdate, status removes it.\n\nWith -http it serves the same as a live page instead, updated twice a second, with each\nproxy's timeline of the last minutes from its record, on a loopback address only\n(default %s); it prints the page's URL, whose random token every request must carry.\n\nFlags:\n", strings.Join(searched, ", "), state.EnvStateDir, defaultHTTPAddr)
		fset.PrintDefaults()
	}
	asJSON := fset.Bool("json", false, "print the statuses as a JSON array")
	all := fset.Bool("all", false, "also show stale status files: of proxies that are gone (killed)")
	dir := fset.String("dir", "", "read the status files in `DIRECTORY` (and "+state.FallbackDir()+")")
	var web httpFlag
	fset.Var(&web, "http", "serve a live page on `ADDR` (loopback only; -http alone: "+defaultHTTPAddr+")")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	dirs := searched
	if *dir != "" {
		dirs = slices.Compact([]string{*dir, state.FallbackDir()})
	}
	if files := web.takeHTTPAddr(fset.Args()); web.on {
		return runStatusHTTP(ctx, web.addr, statusLister(dirs, files, *all), stdout, stderr)
	}
	now := time.Now()
	var ents []state.StatusEntry
	var looked []string
	if fset.NArg() > 0 {
		for _, p := range fset.Args() {
			ents = append(ents, state.ReadStatus(p, now))
		}
	} else {
		for _, d := range dirs {
			looked = append(looked, d)
			es, err := state.ReadStatuses(d, now)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				fmt.Fprintf(stderr, "mcpstdio status: %s\n", term.Line(err.Error()))
			}
			if err == nil {
				state.RemoveStale(d, es, now)
			}
			ents = append(ents, es...)
		}
	}
	shown := ents[:0]
	stale := 0
	for _, e := range ents {
		if e.Err != nil {
			fmt.Fprintf(stderr, "mcpstdio status: %s\n", term.Line(e.Err.Error()))
			continue
		}
		if e.Stale && !*all {
			stale++
			continue
		}
		shown = append(shown, e)
	}
	if *asJSON {
		out := make([]jsonStatus, 0, len(shown))
		for _, e := range shown {
			out = append(out, jsonStatus{Path: e.Path, Stale: e.Stale, QuietUS: e.Quiet.Microseconds(), Stopped: e.Stopped, Status: e.Status})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if len(shown) == 0 {
		where := strings.Join(looked, " and ")
		if where == "" {
			where = strings.Join(fset.Args(), ", ")
		}
		if stale > 0 {
			fmt.Fprintf(stdout, "no running mcpstdio proxy in %s; %s\n", where, staleNote(stale))
			return 0
		}
		fmt.Fprintf(stdout, "no running mcpstdio proxy: no status file in %s (a proxy keeps one in its state directory, whatever -log says; point at another with -dir DIR or %s=DIR, or name status files)\n", where, state.EnvStateDir)
		return 0
	}
	for i, e := range shown {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printStatus(stdout, e, now)
	}
	if stale > 0 {
		fmt.Fprintf(stdout, "\n%s\n", staleNote(stale))
	}
	return 0
}

type jsonStatus struct {
	Path    string `json:"path"`
	Stale   bool   `json:"stale,omitempty"`
	QuietUS int64  `json:"quiet_us,omitempty"` // the proxy runs but has not updated its status for this long
	Stopped bool   `json:"stopped,omitempty"`  // the proxy is stopped (SIGSTOP)
	state.Status
}

// staleNote says that n stale status files were left out, and how to see
// them.
func staleNote(n int) string {
	return fmt.Sprintf("%d stale status %s (the %s gone: killed): mcpstdio status -all shows %s",
		n, plural(n, "file", "files"), plural(n, "proxy is", "proxies are"), plural(n, "it", "them"))
}

// plural is one for n == 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// maxAge is the longest duration a status shows; anything longer, or
// negative, comes from a clock step or a crafted file.
const maxAge = 100 * 365 * 24 * time.Hour

// age formats a duration from a status file for people, rounded to r, or
// "invalid" when it is negative or longer than maxAge.
func age(d, r time.Duration) string {
	if d < 0 || d > maxAge {
		return "invalid"
	}
	return d.Round(r).String()
}

// usAge is age of n microseconds.
func usAge(n int64, r time.Duration) string {
	if n < 0 || n > int64(maxAge/time.Microsecond) {
		return "invalid"
	}
	return age(time.Duration(n)*time.Microsecond, r)
}

// asOfAfter is how old a status file may be before status says how old
// what it shows is.
const asOfAfter = 100 * time.Millisecond

func printStatus(w io.Writer, e state.StatusEntry, now time.Time) {
	s := e.Status
	state := "running"
	switch {
	case e.Stale && e.Gone:
		state = fmt.Sprintf("STALE: the proxy is gone (killed), last update %s ago", age(now.Sub(s.Updated), time.Second))
	case e.Stale:
		state = fmt.Sprintf("STALE (no update for %s: the proxy was probably killed)", age(now.Sub(s.Updated), time.Second))
	case s.Exit != nil:
		state = "server " + s.Exit.Text
	}
	if a := now.Sub(s.Updated); !e.Stale && a >= asOfAfter {
		// What follows is as old as the file: a write "in progress for
		// 43ms" may have gone on for a second since.
		state += ", as of " + age(a, time.Millisecond) + " ago"
	}
	if e.Quiet > 0 {
		why := "it cannot write its status file, or is stopped"
		if e.Stopped {
			why = "it is stopped (SIGSTOP)"
		}
		state += fmt.Sprintf("; the proxy runs but has not updated this status for %s: %s", age(e.Quiet, time.Second), why)
	}
	up := "up " + age(now.Sub(s.Start), time.Second)
	if s.Start.After(s.Updated) {
		up = "up invalid"
	}
	sline(w, "proxy %d → server %d %q, %s, %s", s.ProxyPID, s.ServerPID, strings.Join(s.Argv, " "), up, state)
	if m := s.Metrics; m.DroppedBytes > 0 || m.DroppedEvents > 0 {
		sline(w, "  LOST DETAIL  the observer missed %d bytes (%d events): every byte was forwarded, but frames in them are not in the record and a replay cannot check them", m.DroppedBytes, m.DroppedEvents)
	}
	for _, p := range s.Problems {
		sline(w, "  problem %s", p)
	}
	if s.Log != "" && s.RecordError != "" {
		sline(w, "  record  %s, CUT SHORT: %s", s.Log, s.RecordError)
	} else if s.Log != "" {
		sline(w, "  record  %s", s.Log)
	} else {
		sline(w, "  record  none")
	}
	names := map[string]string{record.DirIn: "stdin ", record.DirOut: "stdout", record.DirErr: "stderr"}
	for _, st := range s.Streams {
		line := fmt.Sprintf("  %s  %d bytes read, %d written", names[st.Dir], st.Read, st.Written)
		if st.BlockedUS > 0 {
			line += fmt.Sprintf(", a write of %d bytes in progress for %s", st.BlockedBytes, usAge(st.BlockedUS, time.Millisecond))
		}
		if st.SourcePipe != nil && *st.SourcePipe > 0 {
			line += fmt.Sprintf(", %d bytes waiting in the source pipe", *st.SourcePipe)
		}
		if st.DestPipe != nil && *st.DestPipe > 0 {
			line += fmt.Sprintf(", %d bytes unread in the destination pipe", *st.DestPipe)
		}
		if st.Current != nil {
			line += fmt.Sprintf(", a line of %d bytes so far", st.Current.Bytes)
			if len(st.Current.ID) > 0 {
				line += " (id " + string(st.Current.ID) + ")"
			}
		}
		if st.Ended {
			line += ", ended"
		}
		sline(w, "%s", line)
	}
	pending, morePending := capped(s.Pending)
	for i, p := range pending {
		if i == len(pending)/2 && morePending > 0 {
			sline(w, "  … %d more pending requests, not listed (the oldest %d and the latest %d are)", morePending, len(pending)/2, len(pending)/2)
		}
		who := "host → server"
		if p.Dir == record.DirOut {
			who = "server → host"
		}
		name := p.Method
		if p.Tool != "" {
			name += " " + p.Tool
		}
		line := fmt.Sprintf("  pending id %s %s (%s): %s, %s", p.ID, name, who, page.StateText(p.State), usAge(p.AgeUS, time.Millisecond))
		if p.Progress > 0 {
			line += fmt.Sprintf(", %d progress", p.Progress)
		}
		if p.ResponseBytes > 0 {
			line += fmt.Sprintf(", response %d bytes read, %d delivered", p.ResponseBytes, p.ResponseDelivered)
		}
		sline(w, "%s", line)
	}
	verdicts, moreVerdicts := capped(s.Verdicts)
	for i, v := range verdicts {
		if i == len(verdicts)/2 && moreVerdicts > 0 {
			sline(w, "  … %d more verdicts, not listed (the first %d and the last %d are)", moreVerdicts, len(verdicts)/2, len(verdicts)/2)
		}
		sline(w, "  verdict %s", v.Text)
	}
	if len(s.Verdicts) == 0 {
		sline(w, "  verdict nothing is stuck")
	}
}

// capped returns the items of a status list that status prints, the first
// and the last page.MaxStatusItems/2 as the live page shows them, and how
// many it leaves out: a flood's status holds thousands.
func capped[T any](items []T) ([]T, int) {
	if len(items) <= page.MaxStatusItems {
		return items, 0
	}
	half := page.MaxStatusItems / 2
	return append(items[:half:half], items[len(items)-half:]...), len(items) - 2*half
}

// sline prints one line of a proxy's status. Much of it comes from the
// status file and the server (argv, ids, methods, problems, verdicts), so
// the whole line goes through term.Line: nothing in it can move the
// cursor, set the title or start a line of its own.
func sline(w io.Writer, format string, a ...any) {
	fmt.Fprintln(w, term.Line(fmt.Sprintf(format, a...)))
}
