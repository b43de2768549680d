// Package proxycmd is the proxy command, whole: its flags, its help, the
// record and status file it keeps in the state directory, and its exit
// status. Two commands run it, `mcpstdio proxy` and mcpstdio-proxy, which
// links nothing else (no network, no probe, no status page), so that the
// process a host runs in place of its server is small; the two differ only
// in the name they give themselves in messages and help.
package proxycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/cmd/internal/version"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// usage is the help's head: %[1]s is the command's name, %[2]s the state
// directory.
const usage = `usage: %[1]s [flags] -- <server command...>

Runs the server command with its stdin, stdout and stderr forwarded exactly
to and from this process's own, and records what passes: put it in a host's
MCP config in place of the server command. Nothing of the proxy's own is
written on stdout, nor on stderr unless -v. The proxy exits with the
server's exit status (128+n if a signal n killed it); SIGINT, SIGTERM and
SIGHUP are passed on to the server.

The record (NDJSON, one event per line, written as it happens) goes to a new
file in the per-user state directory (%[2]s) unless -log names one; a status
file in the state directory, wherever the record goes, is rewritten every
second for "mcpstdio status". Nothing of the proxy's own keeps the server
from starting: what it cannot do (a state directory, a record) it says in
the status file, and on stderr with -v. After the server exits, its output
gets -exit-grace to end and be delivered; then the proxy ends. Its faults
hold the server no longer than the session: -exit-grace after the host
closed stdin or signalled the proxy, they let go of a server still running.

The proxy alone is the command mcpstdio-proxy: the same proxy in a binary
that links nothing else, for less memory than the whole mcpstdio command's
(go install github.com/mcpstdio/mcpstdio/cmd/mcpstdio-proxy@latest).

Flags:
`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// sizeFlag is a byte count flag that takes KiB, MiB and GiB suffixes
// (record.Size); with neg, a negative count is allowed too.
type sizeFlag struct {
	n   *int64
	neg bool
}

func (s sizeFlag) String() string {
	if s.n == nil || *s.n == 0 {
		return ""
	}
	if *s.n < 0 {
		return fmt.Sprint(*s.n)
	}
	return record.Size(*s.n).String()
}

func (s sizeFlag) Set(v string) error {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n < 0 && s.neg {
		*s.n = n
		return nil
	}
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

func parseFlags(name string, args []string, stderr io.Writer) (*proxyFlags, []string, proxy.Config, error) {
	f := &proxyFlags{logMax: state.DefaultLogMax, chunk: proxy.DefaultChunkSize}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	dir, derr := state.DefaultDir()
	if derr != nil {
		dir = "(none: " + derr.Error() + ")"
	}
	// The whole usage for -h; after a bad flag, Run says what is
	// wrong in one line.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if wantsHelp(args) {
		fs.SetOutput(stderr)
		fs.Usage = func() { help(fs, name, dir) }
	}
	fs.StringVar(&f.log, "log", "", "write the record to `FILE` (default: a new file in the state directory)")
	fs.StringVar(&f.dir, "dir", "", "the state `DIRECTORY` for records and status files (default "+dir+")")
	fs.BoolVar(&f.noLog, "no-log", false, "record nothing (the status file is still written)")
	fs.Var(sizeFlag{&f.logMax, true}, "log-max", "rotate the record when a file reaches `SIZE` bytes (-1: never)")
	fs.IntVar(&f.logKeep, "log-keep", state.DefaultLogKeep, "keep `N` rotated record files")
	fs.BoolVar(&f.bodies, "log-bodies", false, "record every byte (after redaction), not only each frame's head, length and hash")
	fs.IntVar(&f.head, "head", proxy.DefaultHeadBytes, "record the first `N` bytes of each frame")
	fs.Var(&f.redact, "redact", "redact the value at JSON `PATH` (e.g. params.arguments.query; * matches any key); repeatable")
	fs.StringVar(&f.redactKeys, "redact-keys", strings.Join(proxy.DefaultRedactKeys, ","), "redact values whose key contains one of these comma-separated `WORDS` (empty: none)")
	fs.Var(sizeFlag{n: &f.chunk}, "chunk", "forward at most `SIZE` bytes at a time in each direction: the proxy's own buffering")
	fs.Var(sizeFlag{n: &f.pipe}, "pipe-size", "set the capacity of the server's pipes to `SIZE` bytes (Linux only)")
	fs.Var(&f.faults, "fault", "inject a fault, `DIR:KIND[:NAME=VALUE,...]` (see below); repeatable")
	fs.StringVar(&f.faultsFile, "faults", "", "inject the faults in JSON `FILE` (an array of objects with the same names)")
	fs.DurationVar(&f.stuck, "stuck", proxy.DefaultStuck, "call a direction blocked once a write has waited this `LONG`")
	fs.DurationVar(&f.unanswered, "unanswered", proxy.DefaultUnanswered, "name a request unanswered after this `LONG`")
	fs.DurationVar(&f.exitGrace, "exit-grace", proxy.DefaultExitGrace, "after the server exits, wait this `LONG` for its output to end; after the host ends the session, this long before faults let go of the server")
	fs.BoolVar(&f.v, "v", false, "say on stderr where the record is and, at the end, the verdicts (changes the stderr the host sees)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, proxy.Config{}, err
	}
	rest := fs.Args()
	if len(rest) > 0 && rest[0] == "--" {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil, nil, proxy.Config{}, errors.New("no server command: " + name + " [flags] -- <server command...>")
	}
	if f.dir == "" && derr == nil {
		f.dir = dir
	}
	cfg := proxy.Config{
		ChunkSize: int(f.chunk), PipeCapacity: int(f.pipe), LogBodies: f.bodies, HeadBytes: f.head,
		Redact: f.redact, RedactKeys: []string{}, Stuck: f.stuck, Unanswered: f.unanswered, ExitGrace: f.exitGrace,
		Version: version.Get().Version, // in every record header
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

// wantsHelp reports whether the flags (before "--") ask for help.
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help", "--h":
			return true
		}
	}
	return false
}

// faultDoc is a fault's doc (proxy.FaultKind.Doc) for -h: a parameter,
// `for` there, is shown <for> ("for for" read as a typo). No regexp: the
// proxy command links little.
func faultDoc(doc string) string {
	parts := strings.Split(doc, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = "<" + parts[i] + ">"
	}
	return strings.Join(parts, "")
}

// help prints the whole usage.
func help(fs *flag.FlagSet, name, dir string) {
	fmt.Fprintf(fs.Output(), usage, name, dir)
	fs.PrintDefaults()
	fmt.Fprintf(fs.Output(), "\nFaults (-fault DIR:KIND[:NAME=VALUE,...]; DIR is in (host to server), out (server stdout) or err (server stderr);\ntriggers: after_bytes=N, after_method=M or after=DURATION; default: at once):\n")
	for _, k := range proxy.FaultKinds() {
		fmt.Fprintf(fs.Output(), "  %-16s %s\n", k.Name, faultDoc(k.Doc))
	}
	fmt.Fprintf(fs.Output(), "\nExamples:\n  %[1]s -- node server.js\n  %[1]s -fault out:stop:after_bytes=1MiB,for=30s -redact params.arguments.query -- ./myserver --stdio\n", name)
}

// Run runs the proxy command with args (its flags, then the server
// command), the host's streams stdin, stdout and stderr (the process's
// own, for the proxy to poll them, or any others), and returns its exit
// status: the server's, 2 for a usage error, 127 when the server command
// is not found, 1 when it cannot start. name is the command's name, as
// its messages and help give it ("mcpstdio proxy", "mcpstdio-proxy").
func Run(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, argv, cfg, err := parseFlags(name, args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %s (see %s -h)\n", name, strings.TrimPrefix(err.Error(), "proxy: "), name)
		return 2
	}
	// Signals are taken from the start: one that comes while the state is
	// made is passed on once the server runs.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, passedSignals...)
	defer signal.Stop(sigs)
	ignoreSIGPIPE()
	st := openState(f, argv[0], time.Now())
	grace := cfg.ExitGrace
	if grace <= 0 {
		grace = proxy.DefaultExitGrace
	}
	defer st.closeWithin(grace)
	if st.log != nil {
		cfg.Record = st.log
	}
	if st.statusPath != "" {
		cfg.OnStatus = st.writeStatus
	}
	st.report(name, f.v, stderr)

	host, restore := HostStreams(stdin, stdout, stderr)
	defer restore()
	if f.v {
		// The proxy writes its verdicts on stderr at the end: keep it open
		// when the server's stderr ends.
		host.Stderr = keepOpen{host.Stderr}
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	p, err := proxy.Start(ctx, cmd, host, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
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
			// A signal goes to the server at once (Status could wait for
			// a busy observer); once the server is gone, so that the
			// signal cannot reach it, the host wants the proxy gone: a
			// signal then never waits for the exit grace.
			if p.Signal(sig) != nil {
				_ = p.Close()
			}
		case <-done:
			exited = true
		}
	}
	if werr != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, werr)
	}
	if f.v {
		for _, v := range res.Verdicts {
			fmt.Fprintf(stderr, "%s: %s\n", name, v.Text)
		}
		fmt.Fprintf(stderr, "%s: server %s\n", name, res.Exit.Text)
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
