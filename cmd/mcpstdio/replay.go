package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/proxycmd"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
	"github.com/mcpstdio/mcpstdio/wire"
)

const replayUsage = `usage: mcpstdio replay [flags] -record FILE -- <server command...>
       mcpstdio replay -serve [flags] -record FILE
       mcpstdio replay -save OUT [-redact PATH...] -record FILE

Plays again a session that "mcpstdio proxy" recorded (FILE, with its rotated
files FILE.1, FILE.2... before it).

With a server command, it plays the host's side against the server: the same
requests, notifications and cancels in the same order, cut into the same
chunks, the host's reads stopped where the recorded host stopped them (and
where the proxy's stop fault stopped reading), and judges the server by the
rules of the release criteria: it keeps reading stdin while its stdout is
blocked (reads-while-blocked), stops the work of a cancelled request (cancel:
went on fails, stopped but answered warns), and answers every request not
cancelled (answered). The first line names the rule that failed and where in
the record, with the evidence; what could not be played or judged is counted
there too. A hang record fails on the server that hung and passes on the
fixed one. With -same it compares instead each message with the recorded one
and prints where the server departs from it: a missing or extra message, a
different result, a stall that no longer blocks the server (for a record of a
correct session). Exit status 0 when no rule fails (with -same: nothing
departs); with -strict, also 1 when something was not played or judged; 1
when a rule fails or the replay cannot run; 2 for a usage error.

With -serve, it plays the server's side on this process's stdin and stdout
for a host under test: put "mcpstdio replay -serve -record FILE" in the host's
MCP configuration in place of the server command. It answers the host's
requests by order, under the host's ids, with the recorded answers, stops
reading stdin where the recorded server did (checking that the host then
blocks writing), and writes its report on stderr at the end: what the host
did that the recorded host did not (exit status 1 then), and the stalls.

With -save, it writes the record as read, after -redact, to OUT (created
0600; never the record itself or one of its rotated files): redact a
record before committing it as test data, and replay it with the same
-redact.

Flags:
`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

type replayFlags struct {
	record, save      string
	serve, strict     bool
	same              bool
	speed             float64
	idleCap, patience time.Duration
	redact, ignore    stringList
}

func parseReplayFlags(args []string, stdout io.Writer) (*replayFlags, []string, []replay.Option, error) {
	f := &replayFlags{}
	fs := flag.NewFlagSet("mcpstdio replay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.record, "record", "", "play the record in `FILE`, written by mcpstdio proxy")
	fs.BoolVar(&f.serve, "serve", false, "play the server's side on stdin and stdout, for a host under test")
	fs.BoolVar(&f.strict, "strict", false, "exit 1 also when something could not be played or judged: a request the record has only the head of, a fault not played, a rule unverified (with -same: a message not compared, a stall not verified)")
	fs.BoolVar(&f.same, "same", false, "judge the server by sameness, not by the rules: compare each message with the recorded one (for a record of a correct session)")
	fs.StringVar(&f.save, "save", "", "write the record, after -redact, to `OUT`")
	fs.Float64Var(&f.speed, "timed", 0, "keep the recorded time between actions, divided by `SPEED` (0: causal, as soon as what each action depended on has happened)")
	fs.DurationVar(&f.idleCap, "idle-cap", 0, "with -timed, cap each recorded gap at `DURATION` first (0: no cap)")
	fs.DurationVar(&f.patience, "patience", replay.DefaultPatience, "wait this `LONG`, beyond twice the recorded time, for a message before calling it missing")
	fs.Var(&f.redact, "redact", "hash the value at JSON `PATH` in every message (-PATH drops it), as it is read and saved, and in what is compared; repeatable")
	fs.Var(&f.ignore, "ignore", "leave the value at JSON `PATH` out of comparisons (timestamps); repeatable")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, replayUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			fmt.Fprint(stdout, "\nPaths are dot-separated keys from the message root, array indexes as numbers, * for any: params.arguments.query, result.content.*.text.\n")
		}
		return nil, nil, nil, err
	}
	argv := fs.Args()
	if len(argv) == 0 && endedByDashDash(fs, args) {
		return nil, nil, nil, errors.New(`no server command after "--"`)
	}
	for _, p := range append(append([]string(nil), f.redact...), f.ignore...) {
		if _, err := wire.ParsePath(strings.TrimPrefix(p, "-")); err != nil {
			return nil, nil, nil, err
		}
	}
	var opts []replay.Option
	if len(f.redact) > 0 {
		opts = append(opts, replay.Redact(f.redact...))
	}
	if len(f.ignore) > 0 {
		opts = append(opts, replay.Ignore(f.ignore...))
	}
	if f.speed < 0 || f.idleCap < 0 || f.patience <= 0 {
		return nil, nil, nil, errors.New("-timed and -idle-cap must not be negative, -patience must be positive")
	}
	if f.speed > 0 {
		opts = append(opts, replay.Timed(f.speed, f.idleCap))
	} else if f.idleCap > 0 {
		return nil, nil, nil, errors.New("-idle-cap needs -timed")
	}
	opts = append(opts, replay.Patience(f.patience))
	if f.strict {
		opts = append(opts, replay.Strict())
	}
	if f.same {
		opts = append(opts, replay.Same())
	}
	switch {
	case f.record == "":
		return nil, nil, nil, errors.New("no -record FILE")
	case f.serve && len(argv) > 0:
		return nil, nil, nil, errors.New("-serve plays the server itself: no server command")
	case !f.serve && len(argv) == 0 && f.save == "":
		return nil, nil, nil, errors.New("want a server command after --, -serve or -save")
	}
	return f, argv, opts, nil
}

// runReplay runs `mcpstdio replay`.
func runReplay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, argv, opts, err := parseReplayFlags(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio replay: %v (see mcpstdio replay -h)\n", err)
		return 2
	}
	rec, err := replay.Load(f.record, opts...)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio replay: -record: %s (see mcpstdio replay -h)\n", strings.TrimPrefix(err.Error(), "replay: "))
		return 2
	}
	if f.save != "" {
		if err := saveRecord(rec, f.save, f.record); err != nil {
			fmt.Fprintf(stderr, "mcpstdio replay: -save: %v\n", err)
			return 1
		}
		if !f.serve && len(argv) == 0 {
			return 0
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.serve {
		return serveRecord(ctx, rec, opts, stdin, stdout, stderr)
	}
	rep, err := replay.Host(ctx, mcptest.Command(argv[0], argv[1:]...), rec, opts...)
	fmt.Fprintln(stdout, rep)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio replay: %v\n", err)
		return 1
	}
	if rep.Err() != nil {
		return 1
	}
	return 0
}

// saveRecord writes rec, read from the record at from, to path as
// writeReport writes a report: created 0600 as the proxy creates records,
// and never over the record or one of its rotated files, whatever the
// name (saving a record over itself lost the rotated part's order: the
// whole session written into the newest file, the older ones left).
func saveRecord(rec *replay.Record, path, from string) error {
	var b bytes.Buffer
	if err := rec.Write(&b); err != nil {
		return err
	}
	return writeReport(path, b.Bytes(), record.Files(from))
}

// serveRecord plays the server's side of rec on the process's stdio.
func serveRecord(ctx context.Context, rec *replay.Record, opts []replay.Option, stdin io.Reader, stdout, stderr io.Writer) int {
	// Duplicates in non-blocking mode, where the system has them, so that
	// closing stdin ends a blocked read when the played server is done.
	st, restore := proxycmd.HostStreams(stdin, stdout, stderr)
	defer restore()
	in, ok := st.Stdin.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(st.Stdin)
	}
	out, ok := st.Stdout.(io.WriteCloser)
	if !ok {
		out = nopWriteCloser{st.Stdout}
	}
	var rep *replay.Report
	opts = append(opts, replay.OnReport(func(r *replay.Report) { rep = r }))
	err := replay.Serve(rec, opts...)(ctx, in, out, st.Stderr)
	if rep != nil {
		fmt.Fprintf(stderr, "mcpstdio replay -serve: %s\n", rep)
	}
	if err != nil && (rep == nil || rep.Err() == nil || err.Error() != rep.Err().Error()) {
		fmt.Fprintf(stderr, "mcpstdio replay -serve: %v\n", err)
	}
	if err != nil {
		return 1
	}
	return 0
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
