package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/cmd/internal/agentconfig"
	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// resultConfig is the result of a server of a config file that was not
// probed, with the reason: not a stdio server, turned off, or a command
// probe cannot start as its host would.
const resultConfig = "config"

// runProbeConfig is "probe -config FILE [NAME...]": it reads the file and
// probes the servers it names, or those of names, one after the other.
func runProbeConfig(ctx context.Context, fs *flag.FlagSet, f *probeFlags, args []string, stdout, stderr io.Writer) int {
	if endedByDashDash(fs, args) {
		return usageError(stderr, fs, errors.New(`-config and a server command: probe the servers of the file (optionally named after the flags) or one command after "--"`))
	}
	file, err := agentconfig.ReadFile(f.configFile)
	if err != nil {
		return usageError(stderr, fs, fmt.Errorf("-config: %v", err))
	}
	names := fs.Args()
	servers, err := file.Select(names)
	if err != nil {
		return usageError(stderr, fs, fmt.Errorf("-config: %v", err))
	}
	if len(servers) != 1 && (f.large.call != nil || f.slow.call != nil || f.cheap.call != nil || f.bounded.call != nil || f.expect.m != nil || f.baseline != "") {
		return usageError(stderr, fs, fmt.Errorf("-large, -slow, -cheap, -bounded, -expect and -baseline are about one server: name one after the flags (%s has %d)", f.configFile, len(servers)))
	}
	cfg, err := f.config()
	if err != nil {
		return usageError(stderr, fs, err)
	}
	base, junit, err := f.open()
	if err != nil {
		return usageError(stderr, fs, err)
	}
	if junit != nil {
		defer junit.Close()
	}
	return withOutput(ctx, "mcpstdio probe", stdout, stderr, f.verbose, f.json, junit, func(ctx context.Context, out *output) int {
		return probeConfig(ctx, file, servers, len(names) > 0, cfg, base, out, stderr)
	})
}

// probeConfig probes servers, from file, and prints the table of their
// verdicts; named says the user chose them (a server turned off in the
// file is probed only then). It returns the exit status: 1 if a criterion
// failed or a server could not be probed.
func probeConfig(ctx context.Context, file *agentconfig.File, servers []*agentconfig.Server, named bool, cfg assertions.ServerConfig, base *assertions.Report, out *output, stderr io.Writer) int {
	p := out.p
	plural := "s"
	if len(servers) == 1 {
		plural = ""
	}
	fmt.Fprintf(p.w, "%s: %d server%s, %s\n", term.Line(file.Path), len(servers), plural, file.Format)
	code := 0
	var rows []configRow
	for _, s := range servers {
		row := configRow{server: s}
		fmt.Fprintln(p.w)
		launch, why := file.Launch(s)
		switch {
		case s.URL != "":
			why = fmt.Errorf("a remote server (%s), not stdio", s.URL)
		case s.Disabled && !named:
			why = errors.New("turned off in the file (name it to probe it all the same)")
		}
		if why != nil {
			row.skip = why.Error()
			fmt.Fprintf(p.w, "== %s\nnot probed: %s\n", term.Line(s.Label()), term.Line(row.skip))
			out.add(&assertions.Report{Subject: s.Label(), Results: []assertions.Result{{Name: resultConfig, Verdict: assertions.Skip, Evidence: row.skip}}})
			rows = append(rows, row)
			continue
		}
		target := mcptest.CommandFunc(func() *exec.Cmd {
			cmd := exec.Command(launch.Argv[0], launch.Argv[1:]...)
			cmd.Env = append(os.Environ(), launch.Env...)
			cmd.Dir = launch.Dir
			return cmd
		})
		fmt.Fprintf(p.w, "== %s\n", term.Line(s.Label()))
		rep, err := probeWith(ctx, launch.Argv, launch.Argv, assertions.ServerCriterionNames(), cfg.Run, p, func(ctx context.Context, progress func(assertions.Result)) *assertions.Report {
			return assertions.CheckServerStream(ctx, target, cfg, progress)
		})
		rep.Subject = s.Label() + ": " + shellQuote(launch.Argv)
		row.report = rep
		if c := exitStatus("mcpstdio probe", rep, err, base, out, stderr); c != 0 {
			code = c
		}
		if err != nil {
			row.skip = "could not be probed: " + firstLine(err.Error())
			fmt.Fprintf(p.w, "%s\n", term.Line(row.skip))
		}
		rows = append(rows, row)
		if errors.Is(err, errInterrupted) {
			break
		}
	}
	printConfigTable(p.w, rows, cfg)
	return code
}

// configRow is a server of the file and how its probe went: its report,
// or why it was not probed.
type configRow struct {
	server *agentconfig.Server
	report *assertions.Report
	skip   string
}

// printConfigTable prints one table of the servers' verdicts, a column
// per server and a row per criterion that ran ("-": not run; capitals: a
// verdict that fails the probe), then why the servers not probed were
// not, and the servers that failed.
func printConfigTable(w io.Writer, rows []configRow, cfg assertions.ServerConfig) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "No servers.")
		return
	}
	heads := columnNames(rows)
	var criteria []string
	for _, name := range assertions.ServerCriterionNames() {
		if cfg.Run == nil || cfg.Run.MatchString(name) {
			criteria = append(criteria, name)
		}
	}
	width := len("criterion")
	for _, c := range criteria {
		width = max(width, len(c))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-*s", width, "criterion")
	for _, h := range heads {
		fmt.Fprintf(w, "  %s", h)
	}
	fmt.Fprintln(w)
	for _, c := range criteria {
		fmt.Fprintf(w, "%-*s", width, c)
		for i, r := range rows {
			cell := "-"
			if r.report != nil {
				for _, res := range r.report.Results {
					if res.Name == c {
						cell = string(res.Verdict)
						if res.Err() != nil {
							cell = strings.ToUpper(cell)
						}
					}
				}
			}
			if i < len(rows)-1 {
				cell = fmt.Sprintf("%-*s", len(heads[i]), cell)
			}
			fmt.Fprintf(w, "  %s", cell)
		}
		fmt.Fprintln(w)
	}
	probed := 0
	var failed []string
	for i, r := range rows {
		switch {
		case r.skip != "":
			fmt.Fprintf(w, "%s: %s\n", heads[i], term.Line(r.skip))
		default:
			probed++
		}
		if r.report != nil && (r.skip != "" || r.report.Err() != nil) {
			failed = append(failed, heads[i])
		}
	}
	fmt.Fprintf(w, "%d of %d servers probed", probed, len(rows))
	if len(failed) > 0 {
		fmt.Fprintf(w, "; FAILED: %s", strings.Join(failed, ", "))
	}
	fmt.Fprintln(w, ".")
}

// columnNames names the table's columns: the servers' names, with their
// project's folder where two entries share one (~/.claude.json).
func columnNames(rows []configRow) []string {
	var heads []string
	for _, r := range rows {
		s := r.server
		h := s.Name
		if s.Project != "" && slices.ContainsFunc(rows, func(o configRow) bool { return o.server != s && o.server.Name == s.Name }) {
			h += "@" + filepath.Base(s.Project)
		}
		heads = append(heads, term.Line(h))
	}
	return heads
}
