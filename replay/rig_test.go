package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
)

func init() {
	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
	})
}

// fakeCommand is mcptest.HelperCommand(ctx, "fake", args...), the fake as
// a child process; under the race detector, from this test binary built
// without it (testkit.WithoutRace): the tests start the fake about 55
// times, and the detector's cost in it (ten times the CPU to start, and
// its whole run instrumented) checks nothing of replay's. The in-process
// proxy and replay run under the detector.
func fakeCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	cmd, err := mcptest.HelperCommand(ctx, "fake", args...)
	if err != nil {
		return nil, err
	}
	return testkit.WithoutRace(ctx, cmd)
}

// fakeTarget is mcptest.Helper("fake", args...) started as fakeCommand
// starts it, bounded by the test.
func fakeTarget(t *testing.T, args ...string) mcptest.Target {
	t.Helper()
	cmd, err := fakeCommand(ctxFor(t), args...)
	if err != nil {
		t.Fatal(err)
	}
	return mcptest.Exec(cmd)
}

// TestMain registers the helpers and runs goleak.VerifyTestMain (mcptest.Main).
// Without the race detector the tests mostly wait (a server's pace, the
// bounds a stalled peer runs out), so unless -parallel is given four per
// CPU run at once (testkit.ParallelForWaits): alone 12.5 -> 5.7 s. Under
// it they compute, and run two per CPU (alone 25.9 -> 19.9 s; -count=10 with one core busy: ok, 212 s);
// TestTimedSlowServer, whose pace was then 29% off once in -count=20 with
// one core busy, runs alone.
func TestMain(m *testing.M) {
	testkit.ParallelForWaits(4, 2)
	mcptest.Main(m, goleak.Cleanup(testkit.Exit))
}

// sink is a proxy record that keeps its lines and lets a test wait for
// an event.
type sink struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	events  []record.Event
	changed chan struct{}
}

func newSink() *sink { return &sink{changed: make(chan struct{})} }

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	for line := range bytes.Lines(p) { // whole lines, one or more a Write
		var e record.Event
		_ = json.Unmarshal(line, &e)
		s.events = append(s.events, e)
	}
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// wait waits for an event that satisfies pred to be recorded.
func (s *sink) wait(t *testing.T, what string, pred func(record.Event) bool) {
	t.Helper()
	timer := time.NewTimer(bound.For(t, time.Minute))
	defer timer.Stop()
	for {
		s.mu.Lock()
		for _, e := range s.events {
			if pred(e) {
				s.mu.Unlock()
				return
			}
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("the record has no %s event", what)
		}
	}
}

func (s *sink) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.buf.Bytes())
}

// recordConfig is the proxy's configuration for the tests' records:
// bodies kept, blocks noticed after the default 100ms (not sooner: on a
// loaded machine the host under the race detector reads slowly, and each
// write to it held 20ms was a stall of the record, which replay plays and
// verifies, a quiet window each: ten of them took a subtest from 2 s to
// 15), and room and time for the
// observer to fall far behind without losing detail (a flood of small
// notifications is thousands of events; a record with lost detail is
// tested apart). The time is ExitGrace, the observer's bound on its
// backlog once the server has exited: with the default 2s, a flood
// recorded on a loaded machine under the race detector lost its last
// thousand notifications and the response (TestLostDetail and
// TestReplaySameServer/flood then found them extra).
func recordConfig() proxy.Config {
	return proxy.Config{LogBodies: true, ObserverBuffer: 256 << 20, ExitGrace: 30 * time.Second, Version: "test"}
}

// recordSession runs the helper fake (with args) behind a proxy with mcptest as
// the host, lets host drive the session, closes it, and returns the
// record's bytes.
func recordSession(t *testing.T, cfg proxy.Config, args []string, host func(t *testing.T, s *mcptest.Session, rec *sink)) []byte {
	t.Helper()
	return recordWith(t, cfg, args, nil, host)
}

// hostFunc is what mcptest does as the recorded host.
type hostFunc = func(t *testing.T, s *mcptest.Session, rec *sink)

var shared = struct {
	mu   sync.Mutex
	recs map[string]*sharedRec
}{recs: map[string]*sharedRec{}}

type sharedRec struct {
	once sync.Once
	b    []byte
	by   string // the test that recorded it
}

// sharedRecord returns recordSession(t, recordConfig(), nil, host), made
// once per test binary for each name (a name always comes with the same
// host): several tests replay the same session (calls: six of them;
// stallCancelResume: three), and recording it again checks nothing they
// do not. A failed recording fails the test that made it and each that
// asks for it after.
func sharedRecord(t *testing.T, name string, host hostFunc) []byte {
	t.Helper()
	shared.mu.Lock()
	r := shared.recs[name]
	if r == nil {
		r = &sharedRec{}
		shared.recs[name] = r
	}
	shared.mu.Unlock()
	r.once.Do(func() {
		r.by = t.Name()
		r.b = recordSession(t, recordConfig(), nil, host)
	})
	if r.b == nil {
		t.Fatalf("the shared %s record failed in %s", name, r.by)
	}
	return r.b
}

// recordWith is recordSession with options for the host.
func recordWith(t *testing.T, cfg proxy.Config, args []string, hostOpts []mcptest.Option, host func(t *testing.T, s *mcptest.Session, rec *sink)) []byte {
	t.Helper()
	rec := newSink()
	cfg.Record = rec
	// Here, not in the server: the first fake under the race detector
	// builds the binary it runs from, which must not count against the
	// session's handshake.
	if _, err := fakeCommand(ctxFor(t), args...); err != nil {
		t.Fatal(err)
	}
	target := mcptest.InProcess(func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		cmd, err := fakeCommand(ctx, args...)
		if err != nil {
			return err
		}
		p, err := proxy.Start(ctx, cmd, proxy.Streams{Stdin: stdin, Stdout: stdout, Stderr: stderr}, cfg)
		if err != nil {
			return err
		}
		_, err = p.Wait()
		return err
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound.For(t, time.Minute))
	defer cancel()
	s, err := mcptest.Start(ctx, target, hostOpts...)
	if err != nil {
		t.Fatal(err)
	}
	host(t, s, rec)
	// End as a host does: close the server's stdin and let it exit.
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitExit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("closing the recorded session: %v", err)
	}
	if ex := s.Stats().Exit; ex.Err != nil {
		t.Fatalf("the proxy ended with %v", ex.Err)
	}
	return rec.bytes()
}

// save writes b to a file in the test's directory and returns its name.
func save(t *testing.T, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound.For(t, 2*time.Minute))
	t.Cleanup(cancel)
	return ctx
}

func call(name string, args any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// wait waits for a response, failing the test on error.
func wait(t *testing.T, p *mcptest.Pending) *mcptest.Response {
	t.Helper()
	r, err := p.Wait(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// kinds lists the departures' kinds and texts, for failure messages.
func kinds(rep *replay.Report) string {
	var b strings.Builder
	for _, d := range rep.Departures {
		b.WriteString("\n  " + d.String())
	}
	return b.String()
}
