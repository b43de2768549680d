package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// runStatus runs `mcpstdio status`: it reads the status files that running
// proxies rewrite every second and prints what each sees.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fset := flag.NewFlagSet("mcpstdio status", flag.ContinueOnError)
	fset.SetOutput(stderr)
	dir, derr := proxy.DefaultDir()
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "usage: mcpstdio status [-json] [-all] [-dir DIR] [-http [ADDR]] [STATUS FILE...]\n\nShows what each running mcpstdio proxy sees now: its pending requests with their ages,\nblocked directions, bytes waiting, and verdicts. It reads the status files the proxies\nrewrite about once a second (in %s unless -dir or files are given).\n\nWith -http it serves the same as a live page instead, updated twice a second, with each\nproxy's timeline of the last minutes from its record, on a loopback address only\n(default %s); it prints the page's URL, whose random token every request must carry.\n\nFlags:\n", dir, defaultHTTPAddr)
		fset.PrintDefaults()
	}
	asJSON := fset.Bool("json", false, "print the statuses as a JSON array")
	all := fset.Bool("all", false, "also show proxies whose status file is stale (the proxy was killed)")
	fset.StringVar(&dir, "dir", dir, "read the status files in `DIRECTORY`")
	var web httpFlag
	fset.Var(&web, "http", "serve a live page on `ADDR` (loopback only; -http alone: "+defaultHTTPAddr+")")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if files := web.takeHTTPAddr(fset.Args()); web.on {
		return runStatusHTTP(ctx, web.addr, statusLister(dir, files, *all), stdout, stderr)
	}
	now := time.Now()
	var ents []proxy.StatusEntry
	if fset.NArg() > 0 {
		for _, p := range fset.Args() {
			ents = append(ents, proxy.ReadStatus(p, now))
		}
	} else {
		if dir == "" {
			fmt.Fprintf(stderr, "mcpstdio status: %v\n", derr)
			return 1
		}
		var err error
		ents, err = proxy.ReadStatuses(dir, now)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "mcpstdio status: %v\n", err)
			return 1
		}
	}
	shown := ents[:0]
	for _, e := range ents {
		if e.Err != nil {
			fmt.Fprintf(stderr, "mcpstdio status: %v\n", e.Err)
			continue
		}
		if e.Stale && !*all {
			continue
		}
		shown = append(shown, e)
	}
	if *asJSON {
		out := make([]jsonStatus, 0, len(shown))
		for _, e := range shown {
			out = append(out, jsonStatus{Path: e.Path, Stale: e.Stale, Status: e.Status})
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	if len(shown) == 0 {
		fmt.Fprintf(stdout, "no running mcpstdio proxy (status files in %s)\n", dir)
		return 0
	}
	for i, e := range shown {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printStatus(stdout, e, now)
	}
	return 0
}

type jsonStatus struct {
	Path  string `json:"path"`
	Stale bool   `json:"stale,omitempty"`
	proxy.Status
}

func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

func printStatus(w io.Writer, e proxy.StatusEntry, now time.Time) {
	s := e.Status
	state := "running"
	switch {
	case e.Stale:
		state = fmt.Sprintf("STALE (no update for %s: the proxy was probably killed)", now.Sub(s.Updated).Round(time.Second))
	case s.Exit != nil:
		state = "server " + s.Exit.Text
	}
	fmt.Fprintf(w, "proxy %d → server %d %q, up %s, %s\n", s.ProxyPID, s.ServerPID, strings.Join(s.Argv, " "), now.Sub(s.Start).Round(time.Second), state)
	if s.Log != "" {
		fmt.Fprintf(w, "  record  %s\n", s.Log)
	}
	names := map[string]string{record.DirIn: "stdin ", record.DirOut: "stdout", record.DirErr: "stderr"}
	for _, st := range s.Streams {
		line := fmt.Sprintf("  %s  %d bytes read, %d written", names[st.Dir], st.Read, st.Written)
		if st.BlockedUS > 0 {
			line += fmt.Sprintf(", a write of %d bytes in progress for %s", st.BlockedBytes, us(st.BlockedUS).Round(time.Millisecond))
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
		fmt.Fprintln(w, line)
	}
	for _, p := range s.Pending {
		who := "host → server"
		if p.Dir == record.DirOut {
			who = "server → host"
		}
		name := p.Method
		if p.Tool != "" {
			name += " " + p.Tool
		}
		line := fmt.Sprintf("  pending id %s %s (%s): %s, %s", p.ID, name, who, p.State, us(p.AgeUS).Round(time.Millisecond))
		if p.Progress > 0 {
			line += fmt.Sprintf(", %d progress", p.Progress)
		}
		if p.ResponseBytes > 0 {
			line += fmt.Sprintf(", response %d bytes", p.ResponseBytes)
		}
		fmt.Fprintln(w, line)
	}
	for _, v := range s.Verdicts {
		fmt.Fprintf(w, "  verdict %s\n", v.Text)
	}
	if len(s.Verdicts) == 0 {
		fmt.Fprintln(w, "  verdict nothing is stuck")
	}
}
