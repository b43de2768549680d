package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/state"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// version is the command's version, written in every record header.
const version = "0.1.0"

const proxyUsage = `usage: mcpstdio proxy [flags] -- <server command...>

Runs the server command with its stdin, stdout and stderr forwarded exactly
to and from this process's own, and records what passes: put it in a host's
MCP config in place of the server command. Nothing of the proxy's own is
written on stdout, nor on stderr unless -v. The proxy exits with the
server's exit status (128+n if a signal n killed it); SIGINT, SIGTERM and
SIGHUP are passed on to the server.

The record (NDJSON, one event per line, written as it happens) goes to a new
file in the per-user state directory (%s) unless -log names one; a status
file beside it is rewritten every second for "mcpstdio status".

Flags:
`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// sizeFlag is a byte count flag that takes KiB, MiB and GiB suffixes.
type sizeFlag struct{ n *int64 }

func (s sizeFlag) String() string {
	if s.n == nil {
		return ""
	}
	return fmt.Sprint(*s.n)
}

func (s sizeFlag) Set(v string) error {
	var n record.Size
	if err := n.Set(v); err != nil {
		return err
	}
	*s.n = int64(n)
	return nil
}

type proxyFlags struct {
	log, dir, faultsFile string
	noLog, bodies, v     bool
	logMax, chunk, pipe  int64
	logKeep, head        int
	redact, faults       stringList
	redactKeys           string
	stuck, unanswered    time.Duration
	exitGrace            time.Duration
}

func parseProxyFlags(args []string, stderr io.Writer) (*proxyFlags, []string, proxy.Config, error) {
	f := &proxyFlags{logMax: state.DefaultLogMax, chunk: proxy.DefaultChunkSize}
	fs := flag.NewFlagSet("mcpstdio proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir, derr := state.DefaultDir()
	if derr != nil {
		dir = "(none: " + derr.Error() + ")"
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), proxyUsage, dir)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nFaults (-fault DIR:KIND[:NAME=VALUE,...]; DIR is in (host to server), out (server stdout) or err (server stderr);\ntriggers: after_bytes=N, after_method=M or after=DURATION; default: at once):\n")
		for _, k := range proxy.FaultKinds() {
			fmt.Fprintf(fs.Output(), "  %-16s %s\n", k.Name, strings.ReplaceAll(k.Doc, "`", ""))
		}
		fmt.Fprintf(fs.Output(), "\nExamples:\n  mcpstdio proxy -- node server.js\n  mcpstdio proxy -fault out:stop:after_bytes=1MiB,for=30s -redact params.arguments.query -- ./myserver --stdio\n")
	}
	fs.StringVar(&f.log, "log", "", "write the record to `FILE` (default: a new file in the state directory)")
	fs.StringVar(&f.dir, "dir", "", "the state `DIRECTORY` for records and status files (default "+dir+")")
	fs.BoolVar(&f.noLog, "no-log", false, "record nothing (the status file is still written)")
	fs.Var(sizeFlag{&f.logMax}, "log-max", "rotate the record when a file reaches `SIZE` bytes (default 64MiB)")
	fs.IntVar(&f.logKeep, "log-keep", state.DefaultLogKeep, "keep `N` rotated record files")
	fs.BoolVar(&f.bodies, "log-bodies", false, "record every byte (after redaction), not only each frame's head, length and hash")
	fs.IntVar(&f.head, "head", proxy.DefaultHeadBytes, "record the first `N` bytes of each frame")
	fs.Var(&f.redact, "redact", "redact the value at JSON `PATH` (e.g. params.arguments.query; * matches any key); repeatable")
	fs.StringVar(&f.redactKeys, "redact-keys", strings.Join(proxy.DefaultRedactKeys, ","), "redact values whose key contains one of these comma-separated `WORDS` (empty: none)")
	fs.Var(sizeFlag{&f.chunk}, "chunk", "forward at most `SIZE` bytes at a time in each direction: the proxy's own buffering (default 64KiB)")
	fs.Var(sizeFlag{&f.pipe}, "pipe-size", "set the capacity of the server's pipes to `SIZE` bytes (Linux only)")
	fs.Var(&f.faults, "fault", "inject a fault, `DIR:KIND[:NAME=VALUE,...]` (see below); repeatable")
	fs.StringVar(&f.faultsFile, "faults", "", "inject the faults in JSON `FILE` (an array of objects with the same names)")
	fs.DurationVar(&f.stuck, "stuck", proxy.DefaultStuck, "call a direction blocked once a write has waited this `LONG`")
	fs.DurationVar(&f.unanswered, "unanswered", proxy.DefaultUnanswered, "name a request unanswered after this `LONG`")
	fs.DurationVar(&f.exitGrace, "exit-grace", proxy.DefaultExitGrace, "after the server exits, wait this `LONG` for its output to end")
	fs.BoolVar(&f.v, "v", false, "say on stderr where the record is and, at the end, the verdicts (changes the stderr the host sees)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, proxy.Config{}, err
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil, nil, proxy.Config{}, errors.New("no server command: mcpstdio proxy [flags] -- <server command...>")
	}
	if f.dir == "" && derr == nil {
		f.dir = dir
	}
	cfg := proxy.Config{
		ChunkSize: int(f.chunk), PipeCapacity: int(f.pipe), LogBodies: f.bodies, HeadBytes: f.head,
		Redact: f.redact, RedactKeys: []string{}, Stuck: f.stuck, Unanswered: f.unanswered, ExitGrace: f.exitGrace,
		Version: version,
	}
	if f.head == 0 {
		cfg.HeadBytes = -1
	}
	for _, w := range strings.Split(f.redactKeys, ",") {
		if w = strings.TrimSpace(w); w != "" {
			cfg.RedactKeys = append(cfg.RedactKeys, w)
		}
	}
	for _, s := range f.faults {
		flt, err := proxy.ParseFault(s)
		if err != nil {
			return nil, nil, cfg, err
		}
		cfg.Faults = append(cfg.Faults, flt)
	}
	if f.faultsFile != "" {
		b, err := os.ReadFile(f.faultsFile)
		if err != nil {
			return nil, nil, cfg, err
		}
		fl, err := proxy.ParseFaults(b)
		if err != nil {
			return nil, nil, cfg, err
		}
		cfg.Faults = append(cfg.Faults, fl...)
	}
	return f, rest, cfg, cfg.Check()
}

// runProxy runs `mcpstdio proxy`.
func runProxy(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, argv, cfg, err := parseProxyFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio proxy: %s (see mcpstdio proxy -h)\n", strings.TrimPrefix(err.Error(), "proxy: "))
		return 2
	}
	st := openState(f, argv[0], time.Now())
	defer st.close()
	if st.log != nil {
		cfg.Record = st.log
	}
	if st.statusPath != "" {
		cfg.OnStatus = st.writeStatus
	}
	switch {
	case f.v:
		if st.log != nil {
			fmt.Fprintf(stderr, "mcpstdio proxy: recording to %s\n", st.logPath)
		}
		for _, p := range st.problems {
			fmt.Fprintf(stderr, "mcpstdio proxy: %s\n", p)
		}
	case len(st.problems) > 0 && st.statusPath == "" && st.log == nil:
		// Nothing else can say it: once, on stderr.
		fmt.Fprintf(stderr, "mcpstdio proxy: %s; the server runs regardless\n", strings.Join(st.problems, "; "))
	}

	host, restore := hostStreams(stdin, stdout, stderr)
	defer restore()
	if f.v {
		// The proxy writes its verdicts on stderr at the end: keep it open
		// when the server's stderr ends.
		host.Stderr = keepOpen{host.Stderr}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, passedSignals...)
	defer signal.Stop(sigs)
	ignoreSIGPIPE()

	cmd := exec.Command(argv[0], argv[1:]...)
	p, err := proxy.Start(ctx, cmd, host, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio proxy: %v\n", err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 1
	}
	done := make(chan struct{})
	var res *proxy.Result
	var werr error
	go func() {
		res, werr = p.Wait()
		close(done)
	}()
	exited := false
	for !exited {
		select {
		case sig := <-sigs:
			if p.Status().Running {
				_ = p.Signal(sig)
			} else {
				// The server is gone and the host wants the proxy gone.
				_ = p.Close()
			}
		case <-done:
			exited = true
		}
	}
	if werr != nil {
		fmt.Fprintf(stderr, "mcpstdio proxy: %v\n", werr)
	}
	if f.v {
		for _, v := range res.Verdicts {
			fmt.Fprintf(stderr, "mcpstdio proxy: %s\n", v.Text)
		}
		fmt.Fprintf(stderr, "mcpstdio proxy: server %s\n", res.Exit.Text)
	}
	return res.Exit.Status
}

// keepOpen is a writer that the proxy cannot close.
type keepOpen struct{ w io.Writer }

func (k keepOpen) Write(p []byte) (int, error) { return k.w.Write(p) }

func (k keepOpen) SetWriteDeadline(t time.Time) error {
	if d, ok := k.w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline(t)
	}
	return errors.ErrUnsupported
}
