package assertions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// floodCap is how long a flood that keeps progressing may take (see
// CheckReadsWhileBlocked for how a flood is judged).
func (c ServerConfig) floodCap() time.Duration { return 6 * c.Within }

// floodIDBase is the first flood request's id, less one: integers (some
// servers answer no other id; 32-bit ones too) in a range no session's own
// requests reach.
const floodIDBase = 1_000_000_000

// floodLines are the requests of the reads-while-blocked flood, each a
// line with its own integer id (floodIDBase+N): the cheap call if configured,
// else a call of a tool that does not exist, padded so that the flood is
// large; either goes through the server's tool-call path, which is where a
// server may queue work behind its blocked writes. There are at least
// cfg.Flood, and at least 8 times the stdin pipe's capacity in bytes.
func floodLines(version string, cfg ServerConfig, capacity int) (lines [][]byte, total int64) {
	params := map[string]any{"name": "mcpstdio-no-such-tool", "arguments": map[string]any{"pad": strings.Repeat("x", 256)}}
	if cfg.Cheap != nil {
		params = cfg.Cheap.params(nil)
	}
	if isModernEra(version) {
		params["_meta"] = map[string]any{wire.MetaProtocolVersion: version, wire.MetaClientCapabilities: map[string]any{}, wire.MetaClientInfo: map[string]any{"name": "mcpstdio", "version": "0"}}
	}
	for i := 1; i <= cfg.Flood || total < 8*int64(capacity); i++ {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": floodIDBase + i, "method": wire.MethodToolsCall, "params": params})
		lines = append(lines, append(b, '\n'))
		total += int64(len(b) + 1)
	}
	return lines, total
}

// floodOutcome is how writing a flood went.
type floodOutcome struct {
	sent      int64         // bytes taken
	took      time.Duration // writing it
	slow      bool          // a bound cut a write short while the server took bytes
	stopped   string        // why the writes stopped, or ""
	detail    string        // the last write's error
	cappedOut bool          // still progressing at floodCap
	seen      bool          // the server's threads could be seen (mcptest.Activity.Known)
	busy      string        // what the server did when it was last seen busy, if it was
}

// rate is the intake in bytes per second.
func (o floodOutcome) rate() float64 { return float64(o.sent) / max(o.took.Seconds(), 1e-6) }

// writeFlood writes the lines, each write bounded by the session timeout
// (Within), going on while the server takes bytes or is busy, and ending as
// soon as it is stopped with requests waiting in its stdin pipe.
func writeFlood(ctx context.Context, s *mcptest.Session, lines [][]byte, cfg ServerConfig) (o floodOutcome) {
	begin, start := time.Now(), s.Stats().StdinBytes
	wctx, stop := context.WithCancel(ctx)
	watch := make(chan floodWatch, 1)
	go func() { watch <- watchFlood(wctx, s, stop) }()
	defer func() {
		stop()
		w := <-watch
		o.seen, o.busy = w.seen, w.busy
		o.sent, o.took = s.Stats().StdinBytes-start, time.Since(begin)
		if w.stopped != nil && o.stopped == "" && !o.cappedOut && o.sent < floodBytes(lines) {
			o.stopped = fmt.Sprintf("the server stopped reading stdin %v into the flood, %d of its %d bytes written: %s", o.took.Round(time.Millisecond), o.sent, floodBytes(lines), w.stopped)
		}
	}()
	idle := 0 // bounds in a row with nothing taken
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		for {
			before := s.Stats().StdinBytes
			err := s.WriteStdin(wctx, line)
			if err == nil {
				idle = 0
				break
			}
			if wctx.Err() != nil {
				if ctx.Err() != nil {
					o.stopped = "interrupted: " + ctx.Err().Error()
				}
				return o // stopped: the deferred function says how
			}
			if e := serverEnded(s); e != "" {
				o.stopped = fmt.Sprintf("tools/call %d of the flood could not be written: %s", i+1, e)
				return o
			}
			if s.Stats().StdinBytes > before {
				// Part taken: the rest is kept and goes first on the
				// next write.
				o.slow, idle, line = true, 0, nil
			} else if idle++; idle == 2 && !watched(watch) {
				o.stopped = fmt.Sprintf("tools/call %d of the flood (%d bytes written so far) could not be written: the server took nothing from stdin in two bounds of %v in a row (unverified as stopped: its threads cannot be seen here)",
					i+1, s.Stats().StdinBytes-start, cfg.Within)
				o.detail = err.Error()
				return o
			} else {
				o.slow = true
			}
			if time.Since(begin) > cfg.floodCap() {
				o.cappedOut = true
				return o
			}
		}
		if time.Since(begin) > cfg.floodCap() && i < len(lines)-1 {
			o.cappedOut = true
			return o
		}
	}
	return o
}

// floodWatch is what watchFlood saw.
type floodWatch struct {
	seen    bool
	stopped *mcptest.Activity // the server stopped with requests waiting
	busy    string
}

// watchFlood watches the server while the flood is written (mcptest's rule)
// and calls stop when it is stopped with requests waiting in its stdin
// pipe; it returns when ctx ends or the threads cannot be seen.
func watchFlood(ctx context.Context, s *mcptest.Session, stop context.CancelFunc) (w floodWatch) {
	w.seen = true
	for ctx.Err() == nil {
		a, err := s.WaitStopped(ctx)
		if !a.Known {
			w.seen = false
			return w
		}
		if a.Busy {
			w.busy = a.String()
		}
		if err == nil && a.StdinWaiting > 0 {
			w.stopped = &a
			stop()
			return w
		}
		if err != nil && ctx.Err() == nil && s.Stats().Exit.How != "" {
			return w
		}
		if err == nil { // stopped with nothing waiting: between two writes
			_ = bound.Pass(ctx, 20*time.Millisecond)
		}
	}
	return w
}

// watched reports whether watchFlood can see the server's threads (it has
// not returned for lack of them).
func watched(watch chan floodWatch) bool {
	select {
	case w := <-watch:
		watch <- w
		return w.seen
	default:
		return true
	}
}

func floodBytes(lines [][]byte) int64 {
	var n int64
	for _, l := range lines {
		n += int64(len(l))
	}
	return n
}

// waitFloodAnswers waits, at most within, until n answers to flood
// requests have arrived since base (counted as unknown ids: the host did
// not route them).
func waitFloodAnswers(ctx context.Context, s *mcptest.Session, base int64, n int, within time.Duration) (got int64, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	for {
		// Answers to requests the host did not route have no event of
		// their own: the counter is looked at every few milliseconds.
		if got = s.Stats().UnknownIDs - base; got >= int64(n) {
			return got, true
		}
		if bound.Pass(ctx, 5*time.Millisecond) != nil {
			return got, false
		}
	}
}

// CheckReadsWhileBlocked blocks the server's stdout with the Large call
// (reads stalled; without a Large call, with its own answers to a flood of
// its cheapest request, ping or server/discover by era), then writes a
// flood of tools/call requests to its stdin (Flood, Cheap) and checks that
// the server keeps reading them while its stdout is still blocked. After
// reads resume, the large response and an answer to every request (a
// result or an error) must arrive. When the Large call does not block
// stdout within Within, the verdict is CheckStallCancelRecover's.
//
// Slow is not stopped (mcptest.Activity states the rule). While the flood
// is written, the server is watched: stopped (nothing taken from stdin
// while requests wait in the pipe, no CPU demand, a thread blocked writing
// stdout or every thread asleep, over its quiet time) fails at once, with
// that evidence; busy or slow, the flood goes on up to 6×Within, and a
// flood still progressing there is a warning that gives the rate and what
// the bound would need. An answer that does not come within Within after
// reads resume is judged by the same rule: stopped fails, busy is
// unverified. Where the server's threads cannot be seen, the bound
// decides, unverified: two bounds (Within) in a row with nothing taken
// from stdin are "stopped reading", a warning unless the same flood went
// through at once with the host reading. A flood that fails is written
// once more to a fresh server with the host reading all the time (in a
// battery; not on a caller's session), judged by the same rule: if the
// server stops there too, it cannot take this flood at all, which says
// nothing of back-pressure, and the criterion is a skip that says so, with
// both rates; if it takes it there, even slowly, the failure stands.
func CheckReadsWhileBlocked(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	base := s.Stats().UnknownIDs
	var big *mcptest.Pending
	var f filled
	if cfg.Large != nil {
		s.StallReads()
		big = s.Send(wire.MethodToolsCall, cfg.Large.params(nil))
		if err := s.WaitWriterBlocked(ctx); err != nil {
			return largeNotBlocking(ctx, s, big, cfg, err)
		}
	} else {
		var err error
		if f, err = fillStdout(ctx, s); err != nil {
			return fillNotBlocking(s, f, err)
		}
	}
	capacity := cfg.PipeCapacity
	if capacity <= 0 {
		capacity = 64 << 10 // Linux's default, the largest of the usual ones
	}
	lines, total := floodLines(s.ProtocolVersion(), cfg, capacity)
	o := writeFlood(ctx, s, lines, cfg)
	evidence := s.Stats().WriterEvidence
	s.ResumeReads()
	if o.stopped != "" {
		res := fail(ruleReadsBlocked, "%s, while its stdout was blocked%s", o.stopped, fillNote(f))
		res.Details, res.bound = o.detail, !o.seen
		return floodFailed(ctx, cfg, lines, res)
	}
	if o.cappedOut {
		if o.sent == 0 {
			return Result{Verdict: Warn, Rule: ruleReadsBlocked, Evidence: fmt.Sprintf("unverified: the server took nothing of the flood from stdin in %v while its stdout was blocked, but was not seen stopped: it was busy (%s)", o.took.Round(time.Millisecond), o.busy)}
		}
		need := time.Duration(float64(total) / o.rate() * float64(time.Second))
		return Result{Verdict: Warn, Rule: ruleReadsBlocked, Evidence: fmt.Sprintf("slow, not stopped: the server takes stdin at %.1f KB/s while its stdout is blocked (%d of the flood's %d bytes in %v); the flood needs %v, past the cap of %v (6×Within): raise Within to about %v, or lower Flood",
			o.rate()/1000, o.sent, total, o.took.Round(time.Millisecond), need.Round(100*time.Millisecond), cfg.floodCap(), (need / 6).Round(100*time.Millisecond))}
	}
	blocked := "a Large call (" + cfg.Large.describe() + ")"
	if big != nil {
		resp, err := waitProgressing(ctx, s, big, cfg.Within)
		if err != nil {
			return stoppedOrBusy(ctx, s, cfg.Within, failErr(ruleReadsBlocked, "the large response after resuming reads", err))
		}
		if res, bad := notLarge(s, resp, cfg.Large); bad {
			return res
		}
	} else {
		blocked = f.describe()
	}
	if got, ok := waitFloodAnswers(ctx, s, base, f.sent+len(lines), cfg.Within+o.took); !ok {
		res := fail(ruleReadsBlocked, "after resuming reads, %d of the %d flood requests (and %d %s) were answered within %v", max(got-int64(f.sent), 0), len(lines), f.sent, f.method, cfg.Within+o.took)
		res.bound = true
		if res = stoppedOrBusy(ctx, s, cfg.Within, res); res.Verdict != Fail {
			return res
		}
		return floodFailed(ctx, cfg, lines, res)
	}
	how := fmt.Sprintf("were read from stdin (%.1f KB/s)", o.rate()/1000)
	if o.slow {
		how = fmt.Sprintf("were read from stdin, slowly (%.1f KB/s),", o.rate()/1000)
	}
	return pass("%d tools/call requests (%d bytes, %.1f× the %d-byte stdin pipe) %s in %v while stdout was blocked by %s (%s); all answered after resuming",
		len(lines), o.sent, float64(o.sent)/float64(capacity), capacity, how, o.took.Round(time.Millisecond), blocked, evidence)
}

// floodFailed writes the same flood once to a fresh server with the host
// reading all the time, judged by the same rule: if the server stops there
// too, it cannot take this flood at all, and res (a back-pressure failure)
// becomes a skip that says so, with both rates; if it takes the flood
// there, quickly or slowly, it did not stop for want of work, and res
// stands with the control's rate. Without a fresh server (a Check called
// on a caller's session), res stands.
func floodFailed(ctx context.Context, cfg ServerConfig, lines [][]byte, res Result) Result {
	if cfg.fresh == nil {
		return res
	}
	s, err := cfg.fresh(ctx)
	if err != nil {
		return res
	}
	defer s.Close()
	base := s.Stats().UnknownIDs
	o := writeFlood(ctx, s, lines, cfg)
	total := floodBytes(lines)
	control := ""
	switch {
	case o.stopped != "":
		control = o.stopped
	case o.cappedOut:
		res.Evidence += fmt.Sprintf("; with the host reading all the time the same flood was taken slowly (%.1f KB/s, %d of its %d bytes in %v, not stopped), so the stalled stdout is the cause", o.rate()/1000, o.sent, total, o.took.Round(time.Millisecond))
		return res
	default:
		if got, ok := waitFloodAnswers(ctx, s, base, len(lines), cfg.Within+o.took); !ok {
			control = fmt.Sprintf("%d of the %d flood requests were answered within %v", got, len(lines), cfg.Within+o.took)
		}
	}
	if control == "" {
		// The same server took the same flood when read: that, not the
		// bound alone, is the evidence, in-process too.
		res.Evidence += fmt.Sprintf("; with the host reading all the time the same flood went through (%.1f KB/s), so the stalled stdout is the cause", o.rate()/1000)
		res.bound = false
		return res
	}
	return skip("the server cannot take this flood at all: with the host reading all the time too, %s (%.1f KB/s until then); this says nothing of back-pressure: configure a cheaper Cheap call (probe -cheap) or a smaller Flood (with the host's reads stalled: %s)", control, o.rate()/1000, res.Evidence)
}

// stoppedOrBusy judges res, a failure because an answer did not come
// within a bound, by mcptest's rule, watching the server up to within
// more: stopped, the failure stands with that evidence; busy (CPU demand,
// bytes) to the end, it is slow, not stopped: unverified, with what was
// seen. Where the threads cannot be seen, res is returned as it is (the
// battery makes a bound alone unverified there).
func stoppedOrBusy(ctx context.Context, s *mcptest.Session, within time.Duration, res Result) Result {
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	a, err := s.WaitStopped(wctx)
	switch {
	case !a.Known || s.Stats().Exit.How != "":
		return res
	case err == nil:
		res.Evidence += "; " + a.String()
		res.bound = false
		return res
	case a.Busy:
		return Result{Verdict: Warn, Rule: res.Rule, Evidence: "unverified: " + res.Evidence + "; slow, not stopped: " + a.String(), Details: res.Details}
	}
	return res
}

// fillNote names what blocked stdout when the fill did, for evidence.
func fillNote(f filled) string {
	if f.method == "" {
		return ""
	}
	return " by " + f.describe()
}
