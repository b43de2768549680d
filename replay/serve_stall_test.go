package replay_test

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
)

// floodEchoes is how many echo calls of floodText bytes a host sends while
// the server is not reading: 192 KiB, three times a pipe.
const (
	floodEchoes = 12
	floodText   = 16 << 10
)

// hostFlood is a host that stops reading, calls big (1 MiB), and while the
// server is blocked writing it sends echo calls (n of them, from a goroutine,
// as each write may block); when wait returns it resumes reading and waits
// for every answer.
func hostFlood(t *testing.T, ctx context.Context, s *mcptest.Session, n int, wait func()) {
	t.Helper()
	s.StallReads()
	big := s.Send("tools/call", call(fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 1 << 20}.Map()))
	if err := s.WaitWriterBlocked(ctx); err != nil {
		t.Fatal(err)
	}
	sent := make(chan []*mcptest.Pending, 1)
	go func() {
		var ps []*mcptest.Pending
		for range n {
			ps = append(ps, s.Send("tools/call", call(fakeserver.ToolEcho, map[string]any{"text": strings.Repeat("y", floodText)})))
		}
		sent <- ps
	}()
	wait()
	s.ResumeReads()
	if _, err := big.Wait(ctx); err != nil {
		t.Error(err)
	}
	for _, p := range <-sent {
		if _, err := p.Wait(ctx); err != nil {
			t.Error(err)
		}
	}
}

// recordServerStall records a session with a server that does not read its
// stdin while it writes (the fake's -naive loop): the host floods it while
// it is blocked writing a large result, and the proxy's writes to its
// stdin block.
func recordServerStall(t *testing.T) *replay.Record {
	t.Helper()
	b := recordSession(t, recordConfig(), []string{"-naive"}, func(t *testing.T, s *mcptest.Session, rec *sink) {
		hostFlood(t, ctxFor(t), s, floodEchoes, func() {
			rec.wait(t, "block of stdin", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirIn })
		})
	})
	rec, err := replay.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Stalls) == 0 || !hasStall(rec, record.DirIn) {
		t.Fatalf("the record shows no stall of the server's stdin: %v", rec.Stalls)
	}
	return rec
}

func hasStall(rec *replay.Record, dir string) bool {
	for _, st := range rec.Stalls {
		if st.Dir == dir {
			return true
		}
	}
	return false
}

// serveWith starts rec's server side, played by Serve, for mcptest as the
// host under test (wrap, if given, changes the stdin Serve gets); the
// report arrives on the channel when Serve ends.
func serveWith(t *testing.T, rec *replay.Record, wrap func(io.ReadCloser) io.ReadCloser, opts ...replay.Option) (*mcptest.Session, <-chan *replay.Report) {
	t.Helper()
	reports := make(chan *replay.Report, 1)
	opts = append(opts, replay.OnReport(func(r *replay.Report) { reports <- r }))
	serve := replay.Serve(rec, opts...)
	s := mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
		if wrap != nil {
			stdin = wrap(stdin)
		}
		return serve(ctx, stdin, stdout, stderr)
	}))
	return s, reports
}

// endServe closes the host's side and returns Serve's report.
func endServe(t *testing.T, s *mcptest.Session, reports <-chan *replay.Report) *replay.Report {
	t.Helper()
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitExit(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	return <-reports
}

// stdinStalls returns the report's stalls of the server's stdin.
func stdinStalls(rep *replay.Report) []replay.StallCheck {
	var out []replay.StallCheck
	for _, c := range rep.Stalls {
		if c.Dir == record.DirIn {
			out = append(out, c)
		}
	}
	return out
}

// TestServeStall: where the recorded server stopped reading its stdin,
// the played server stops too, and the host under test, which floods it
// as the recorded host did, is found blocked writing (its stdin pipe
// full) before the played server goes on, or, at a later stall, to have
// written what the recorded host had; the report says so. The same in
// Timed mode.
func TestServeStall(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	rec := recordServerStall(t)
	for _, mode := range []struct {
		name string
		opts []replay.Option
	}{{"causal", nil}, {"timed", []replay.Option{replay.Timed(1, 0)}}} {
		t.Run(mode.name, func(t *testing.T) {
			s, reports := serveWith(t, rec, nil, mode.opts...)
			hostFlood(t, ctxFor(t), s, floodEchoes, func() {})
			rep := endServe(t, s, reports)
			t.Logf("Serve's report: %s", rep)
			// A record made under load can have a stall in the handshake
			// (the recorded server slow to start reading): the played
			// one finds the host had written what the recorded one had,
			// and is not the flood's.
			cs := slices.DeleteFunc(stdinStalls(rep), func(c replay.StallCheck) bool { return c.At < floodStart(rec) })
			if len(cs) == 0 {
				t.Fatalf("Serve's report has no stall of stdin in the flood: %s", rep)
			}
			// The flood's first stall finds the host blocked; later ones (the
			// server read again in bursts) may find it has written all
			// it had.
			if !strings.Contains(cs[0].Text, "the host blocked writing stdin: its pipe holds") {
				t.Errorf("want the host found blocked writing: %s", cs[0])
			}
			if cs[0].Outcome != replay.StallVerified {
				t.Errorf("want the first stall verified: %s", cs[0])
			}
			// A later stall may fall inside a message of the host's that
			// is longer than the recorded one: the played server then
			// reads on to its end, and the stall is reported as moved,
			// with what it then found.
			for _, c := range cs[1:] {
				switch {
				case c.Outcome == replay.StallVerified:
				case c.Outcome == replay.StallMoved && strings.Contains(c.Text, "then the host"):
				default:
					t.Errorf("want a later stall verified, or moved and then verified: %s", c)
				}
			}
			if rep.Err() != nil || !strings.HasPrefix(rep.String(), "replay: as recorded") || !strings.Contains(rep.String(), "stalls verified") {
				t.Errorf("Serve's report: %s", rep)
			}
		})
	}
}

// floodStart is where the host's first tools/call starts in rec's stdin.
func floodStart(rec *replay.Record) int64 {
	for _, f := range rec.Host {
		if f.Method == "tools/call" {
			return f.Off
		}
	}
	return 0
}

// TestServeStallNotBlocking: a host that sends one echo where the recorded
// one flooded does not block writing: stall-not-blocking on stdin.
func TestServeStallNotBlocking(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	rec := recordServerStall(t)
	s, reports := serveWith(t, rec, nil, replay.Patience(300*time.Millisecond))
	hostFlood(t, ctxFor(t), s, 1, func() {})
	rep := endServe(t, s, reports)
	t.Logf("Serve's report: %s", rep)
	// A record made under load can have an early stall, within the
	// bytes one echo writes too (the recorded server paused reading
	// before the flood): that one is verified, as the host has written
	// what the recorded one had. The flood's stall is not blocking.
	cs := stdinStalls(rep)
	i := 0
	for i < len(cs) && cs[i].Outcome == replay.StallVerified {
		i++
	}
	if i == len(cs) || cs[i].Outcome != replay.StallNotReached || rep.Count(replay.StallNotBlocking) == 0 {
		t.Fatalf("want stall-not-blocking on stdin (after verified stalls only): %s", rep)
	}
	if !strings.Contains(cs[i].Text, "the host did not block writing") {
		t.Errorf("the stall's text: %s", cs[i])
	}
}

// TestServeStallUnverifiable: given a stdin that is not a file, the played
// server cannot read the pipe's fill level: the stall is unverified, and
// the headline says so.
func TestServeStallUnverifiable(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	rec := recordServerStall(t)
	hide := func(r io.ReadCloser) io.ReadCloser { return struct{ io.ReadCloser }{r} }
	s, reports := serveWith(t, rec, hide)
	hostFlood(t, ctxFor(t), s, floodEchoes, func() {})
	rep := endServe(t, s, reports)
	t.Logf("Serve's report: %s", rep)
	cs := stdinStalls(rep)
	if len(cs) == 0 || cs[0].Outcome != replay.StallUnverifiable || !strings.Contains(cs[0].Text, "not a file") {
		t.Fatalf("want the stall unverifiable, saying why: %s", rep)
	}
	if !strings.Contains(rep.String(), "stalls unverified") || rep.Complete() {
		t.Errorf("the headline claims more than was checked: %s", rep)
	}
}
