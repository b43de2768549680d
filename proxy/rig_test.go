package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
	mcptest.RegisterHelper("bytes", bytesServer)
	mcptest.RegisterHelper("exit", exitServer)
	mcptest.RegisterHelper("script", scriptServer)
}

// bound is how long a test waits for anything: generous, and within the
// test's deadline.
func bound(t testing.TB) time.Duration {
	d := 2 * time.Minute
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := tt.Deadline(); ok {
			d = min(d, time.Until(dl)-10*time.Second)
		}
	}
	return max(d, time.Second)
}

// recSink is a Record that keeps the events and lets a test wait for one.
// Between block and unblock, Write waits: the observer is then stuck
// writing, as on a slow disk.
type recSink struct {
	mu      sync.Mutex
	lines   [][]byte
	events  []record.Event
	changed chan struct{}
	hold    chan struct{}
	waiting chan struct{} // closed when a Write waits on hold
	bad     error
	writes  int // Write calls: each holds whole lines, the first the header alone
}

func newRecSink() *recSink { return &recSink{changed: make(chan struct{})} }

// block makes Write wait until unblock; the channel it returns is closed
// once a Write waits.
func (s *recSink) block() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold, s.waiting = make(chan struct{}), make(chan struct{})
	return s.waiting
}

func (s *recSink) unblock() {
	s.mu.Lock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
	s.mu.Unlock()
}

func (s *recSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	hold := s.hold
	if hold != nil && s.waiting != nil {
		close(s.waiting)
		s.waiting = nil
	}
	s.mu.Unlock()
	if hold != nil {
		<-hold
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(p) == 0 || p[len(p)-1] != '\n' {
		s.bad = fmt.Errorf("record write %d does not end a line: %q", s.writes+1, p)
	}
	if s.writes == 0 && bytes.Count(p, []byte("\n")) != 1 {
		s.bad = fmt.Errorf("the record's first write is not the header alone: %q", p)
	}
	s.writes++
	for line := range bytes.Lines(p) {
		var e record.Event
		if err := json.Unmarshal(line, &e); err != nil && s.bad == nil {
			s.bad = fmt.Errorf("record line %d is not an event: %v: %s", len(s.lines)+1, err, line)
		}
		s.lines = append(s.lines, bytes.Clone(line))
		s.events = append(s.events, e)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// all returns the events so far.
func (s *recSink) all() []record.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]record.Event(nil), s.events...)
}

func (s *recSink) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		if len(l) > 400 {
			l = append(l[:400:400], "…\n"...)
		}
		b.Write(l)
	}
	return b.String()
}

// wait returns the first event that satisfies pred, waiting for it to be
// recorded.
func (s *recSink) wait(t testing.TB, what string, pred func(record.Event) bool) record.Event {
	t.Helper()
	timer := time.NewTimer(bound(t))
	defer timer.Stop()
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if pred(e) {
				s.mu.Unlock()
				return e
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("the record has no %s event after %v; record:\n%s", what, bound(t), s.text())
		}
	}
}

// find returns the events that satisfy pred.
func (s *recSink) find(pred func(record.Event) bool) []record.Event {
	var out []record.Event
	for _, e := range s.all() {
		if pred(e) {
			out = append(out, e)
		}
	}
	return out
}

func isEv(kind string) func(record.Event) bool {
	return func(e record.Event) bool { return e.Ev == kind }
}

func verdictOf(kind string) func(record.Event) bool {
	return func(e record.Event) bool {
		return e.Ev == record.EvVerdict && e.Verdict != nil && e.Verdict.Kind == kind
	}
}

// rig is a proxy running in this process between real pipes (the host's
// side, held by the test) and a real child process.
type rig struct {
	t       testing.TB
	p       *proxy.Proxy
	rec     *recSink
	stdin   *os.File // the host writes the server's stdin here
	stdout  *os.File // the host reads the server's stdout here
	stderr  *os.File // and its stderr here
	closers []io.Closer
	// recordFails: the test's record fails on purpose, and Close says so.
	recordFails bool
}

// startRig starts cmd behind a proxy configured by cfg, recording into a
// recSink as well as cfg.Record.
func startRig(t testing.TB, cmd *exec.Cmd, cfg proxy.Config) *rig {
	t.Helper()
	r := &rig{t: t}
	var ends [3][2]*os.File
	for i := range ends {
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		ends[i] = [2]*os.File{pr, pw}
		r.closers = append(r.closers, pr, pw)
	}
	r.stdin, r.stdout, r.stderr = ends[0][1], ends[1][0], ends[2][0]
	r.rec = newRecSink()
	if cfg.Record == nil {
		cfg.Record = r.rec
	} else {
		cfg.Record = io.MultiWriter(cfg.Record, r.rec)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound(t))
	p, err := proxy.Start(ctx, cmd, proxy.Streams{Stdin: ends[0][0], Stdout: ends[1][1], Stderr: ends[2][1]}, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r.p = p
	t.Cleanup(func() {
		defer cancel()
		if err := p.Close(); err != nil && !r.recordFails {
			t.Errorf("Close: %v", err)
		}
		for _, c := range r.closers {
			c.Close()
		}
		if r.rec != nil && r.rec.bad != nil {
			t.Error(r.rec.bad)
		}
	})
	return r
}

// helperCmd is a helper child of this test binary.
func helperCmd(t testing.TB, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), bound(t))
	t.Cleanup(cancel)
	return mustHelper(ctx, name, args...)
}

// mustHelper is mcptest.HelperCommand for a helper this test binary
// registers: its error would be a bug of the test itself. Under the race
// detector the child is this test binary built without it
// (testkit.WithoutRace): the helpers are the servers and relays the
// proxy is tested with, started about 70 times, and the detector in them
// (ten times the CPU to start, and all their work instrumented) checks
// nothing of the proxy's. The proxy under test runs in this process,
// under the detector. Only a failed build of that binary (its output is
// in the panic) is not a bug of the test.
func mustHelper(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd, err := mcptest.HelperCommand(ctx, name, args...)
	if err == nil {
		cmd, err = testkit.WithoutRace(ctx, cmd)
	}
	if err != nil {
		panic(err)
	}
	return cmd
}

// drain reads f to EOF in the background, returning how many bytes and
// their hash; wait for the result with the returned function.
func drain(t testing.TB, f io.Reader) func() (int64, string) {
	type res struct {
		n int64
		h string
	}
	ch := make(chan res, 1)
	go func() {
		h := sha256.New()
		n, _ := io.Copy(h, f)
		ch <- res{n, hex.EncodeToString(h.Sum(nil))}
	}()
	return func() (int64, string) {
		t.Helper()
		select {
		case r := <-ch:
			return r.n, r.h
		case <-time.After(bound(t)):
			t.Fatalf("reading did not end within %v", bound(t))
			return 0, ""
		}
	}
}

// wait waits for the proxy to end, bounded.
func (r *rig) wait() *proxy.Result {
	r.t.Helper()
	ch := make(chan *proxy.Result, 1)
	go func() {
		res, err := r.p.Wait()
		if err != nil {
			r.t.Errorf("Wait: %v", err)
		}
		ch <- res
	}()
	select {
	case res := <-ch:
		return res
	case <-time.After(bound(r.t)):
		r.t.Fatalf("the proxy did not end within %v; status: %+v", bound(r.t), r.p.Status())
		return nil
	}
}

// The stream generator of the byte-exact test: deterministic bytes with
// what a careless proxy mangles: junk lines, CRLF, NUL, invalid UTF-8,
// a line without a final newline, and one long line.
func streamBytes(seed string, long int) []byte {
	var b bytes.Buffer
	b.Grow(long + 1024)
	b.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	b.WriteString("banner: not JSON at all\n")
	b.WriteString(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}` + "\r\n")
	b.WriteString("nul:\x00\x00 and invalid UTF-8: \xff\xfe\xc3\x28 " + seed + "\n")
	b.WriteString("\n\n\r\n")
	b.WriteString(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`)
	unit := []byte("0123456789abcdef" + seed)
	b.Write(bytes.Repeat(unit, long/len(unit)))
	b.Write(unit[:long%len(unit)])
	b.WriteString(`"}}` + "\n")
	b.WriteString(`{"jsonrpc":"2.0","id":"last","result":{}}` + "\n")
	b.WriteString("no final newline " + seed)
	return b.Bytes()
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// bytesServer writes streamBytes("out", N) to stdout and
// streamBytes("err", N/4) to stderr while it hashes all of stdin, then
// writes "<n> <sha256>" of stdin to the file named by its second arg.
// Args: N, report file.
func bytesServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	args := mcptest.HelperArgs()
	n, _ := strconv.Atoi(args[0])
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		stdout.Write(streamBytes("out", n))
		stdout.Close()
	}()
	go func() {
		defer wg.Done()
		stderr.Write(streamBytes("err", n/4))
	}()
	h := sha256.New()
	got, err := io.Copy(h, stdin)
	wg.Wait()
	if err != nil {
		return err
	}
	return os.WriteFile(args[1], fmt.Appendf(nil, "%d %x", got, h.Sum(nil)), 0o600)
}

// exitServer ends as its args say: "N" exits with N after stdin ends (or
// at once with "now"), "signal" kills itself with SIGKILL, "close-stdin"
// closes its stdin and runs until it is killed, "close-stdout" closes its
// stdout and reads stdin until it ends.
func exitServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	args := mcptest.HelperArgs()
	if args[0] == "close-stdin" {
		stdin.Close()
		<-ctx.Done() // until the proxy kills it
		return nil
	}
	if args[0] == "close-stdout" {
		stdout.Close()
		io.Copy(io.Discard, stdin)
		return nil
	}
	if len(args) < 2 || args[1] != "now" {
		io.Copy(io.Discard, stdin)
	}
	switch args[0] {
	case "signal":
		killSelf()
	default:
		code, _ := strconv.Atoi(args[0])
		os.Exit(code)
	}
	return nil
}

// scriptServer writes its args as lines on stdout, then reads stdin until
// it ends.
func scriptServer(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	for _, l := range mcptest.HelperArgs() {
		if _, err := io.WriteString(stdout, l+"\n"); err != nil {
			return err
		}
	}
	_, err := io.Copy(io.Discard, stdin)
	return err
}
