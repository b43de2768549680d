package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// slowWatch bounds how long a wait watches on, past its bound, a server
// that is still busy by the one rule (bytes arriving, CPU demand, a
// process it started at work): long enough for a loaded machine, short of
// a server that never ends.
const slowWatch = 30 * time.Second

// pollInterval is how often a wait looks at the state of stdout, which
// has no event: the stall valve, bytes arriving inside a frame.
const pollInterval = 4 * time.Millisecond

// wait waits until cond holds, at most d, matching what arrives
// meanwhile; extend says a stall may be let further to get there. When d
// runs out while the server's output is still arriving (a slow server, or
// a loaded machine, not a missing message), it waits d again, up to
// slowWatch in all; busy says it gave up there with output still arriving.
func (p *hostPlayer) wait(ctx context.Context, cond func() bool, d time.Duration, extend bool) (ok, busy bool, err error) {
	w, err := p.waitFor(ctx, cond, d, extend, false)
	return w.ok, w.busy, err
}

// waited is how a wait ended.
type waited struct {
	ok   bool // cond held
	busy bool // given up at slowWatch with the server still busy: what did not come is unverified, the harness's bound
	// stopped is the one rule's evidence that the server stopped without
	// cond holding (waitJudged); nil where it was not judged: the server
	// ended, or its threads cannot be seen and the bound decided.
	stopped *mcptest.Activity
}

// waitJudged waits as wait does, and when d runs out with nothing
// arriving, judges the server by the one rule (mcptest.Session.WaitStopped)
// while it goes on matching what arrives, up to slowWatch from its start:
// it gives up once the server is stopped (with the evidence) or has ended,
// and watches on while it is busy (CPU demand, or waiting for a process
// it started, as a shell relay waits for its sleep; a loaded machine
// stretches such gaps past any bound the record gives). Where the server's
// threads cannot be seen (an in-process server, no /proc), the bound
// decides, as in wait.
func (p *hostPlayer) waitJudged(ctx context.Context, cond func() bool, d time.Duration, extend bool) (waited, error) {
	return p.waitFor(ctx, cond, d, extend, true)
}

// judgement is what the one rule's watch in waitFor returned.
type judgement struct {
	a   mcptest.Activity
	err error
}

// watchStopped runs Session.WaitStopped until deadline in a goroutine
// of its own, which sends its answer on the channel; end stops it and
// waits for it.
func (p *hostPlayer) watchStopped(ctx context.Context, deadline time.Time) (judged <-chan judgement, end func()) {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	ch := make(chan judgement, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a, err := p.s.WaitStopped(wctx)
		ch <- judgement{a, err}
	}()
	return ch, func() { cancel(); <-done }
}

func (p *hostPlayer) waitFor(ctx context.Context, cond func() bool, d time.Duration, extend, judge bool) (waited, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen, began := p.s.Stdout().Read, time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var judged <-chan judgement // the watch's answer, once it runs
	var endWatch func()
	defer func() {
		if endWatch != nil {
			endWatch()
		}
	}()
	for {
		p.poll()
		if cond() {
			return waited{ok: true}, nil
		}
		p.adjustStall(extend)
		select {
		case <-p.s.Changed():
		case <-p.wake:
		case <-tick.C:
		case <-timer.C:
			p.poll()
			if cond() {
				return waited{ok: true}, nil
			}
			if n := p.s.Stdout().Read; n != seen {
				if time.Since(began) >= slowWatch {
					return waited{busy: true}, nil
				}
				seen = n
				timer.Reset(d)
				continue
			}
			if !judge {
				return waited{}, nil
			}
			judged, endWatch = p.watchStopped(ctx, began.Add(slowWatch))
		case j := <-judged:
			p.poll()
			switch {
			case cond():
				return waited{ok: true}, nil
			case j.err == nil:
				return waited{stopped: &j.a}, nil
			case ctx.Err() != nil:
				return waited{}, ctx.Err()
			case !j.a.Known || p.s.Stats().Exit.How != "":
				return waited{}, nil
			}
			return waited{busy: true}, nil
		case <-ctx.Done():
			return waited{}, ctx.Err()
		}
	}
}

// finish resumes reading, waits for the rest of the recorded output and
// the server's exit, and reports what is missing; played says the
// actions all ran.
func (p *hostPlayer) finish(ctx context.Context, played bool) {
	if played && p.armed {
		// A stall the record ended in, with no action of the host after
		// its start: its state is checked now.
		var end time.Duration
		for _, e := range p.rec.Events {
			end = max(end, time.Duration(e.T)*time.Microsecond)
		}
		if _, err := p.stallState(ctx, end, true); err != nil {
			return
		}
		if err := p.judgeReads(ctx); err != nil {
			return
		}
	}
	if p.armed || p.s.Stdout().Stalled {
		p.armed, p.inStall = false, false
		p.s.ResumeReads()
	}
	p.readsResumed(ctx)
	if err := p.writeDeferred(ctx); err != nil || ctx.Err() != nil {
		return
	}
	var lastT, lastOut time.Duration
	for _, f := range p.rec.Host {
		lastT = max(lastT, f.T)
	}
	for _, f := range p.rec.Server {
		lastOut = max(lastOut, f.T)
	}
	if p.rules {
		p.judgeAnswers(ctx, p.pace.bound(lastOut-lastT))
		p.judgeCancels(ctx)
		return
	}
	all := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !slices.Contains(p.resolved, false)
	}
	began := time.Now()
	if w, _ := p.waitJudged(ctx, all, p.pace.bound(lastOut-lastT), false); !w.ok && ctx.Err() == nil {
		var js []int
		for j := range p.rec.Server {
			js = append(js, j)
		}
		why := fmt.Sprintf("did not come within %v of the host's last action", time.Since(began).Round(time.Millisecond))
		if !played {
			why = "did not come before the replay ended"
		}
		p.notCome(js, why, w)
	}
	if played {
		p.exited(ctx)
	}
}

// exited checks the server's exit, if the recorded one exited after its
// stdin closed.
func (p *hostPlayer) exited(ctx context.Context) {
	r := p.rec
	if r.HostEOF < 0 || r.Exit < r.HostEOF || r.ExitCode == nil {
		return
	}
	d := p.pace.bound(r.Exit - r.HostEOF)
	ectx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ex, err := p.s.WaitExit(ectx)
	var still string // why the exit is missing: the evidence, or that it is unverified
	if err != nil && ctx.Err() == nil {
		// The bound is the harness's, not the server's: a loaded machine
		// can take longer than it to end a process. Call the exit
		// missing only when the server is stopped by the one rule
		// (asleep, taking and writing nothing) while it has not ended;
		// while it is busy, watch on, up to exitWatch.
		ex, still, err = p.watchExit(ctx, d)
	}
	if err == nil {
		// The exit can be seen before the host has read the last bytes
		// the server wrote: match them (a response to a cancelled
		// request, say) before the session closes, within the same
		// bound (a grandchild may hold stdout open).
		_, _, _ = p.wait(ctx, func() bool { return p.s.Stdout().Ended }, d, false)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	recorded := fmt.Sprintf("the recorded one exited with %d after %v", *r.ExitCode, (r.Exit - r.HostEOF).Round(time.Millisecond))
	switch {
	case err != nil && still == "":
		p.departLocked(Departure{
			Kind: Missing, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server did not exit within %v of its stdin closing (the replay ended first); %s", d.Round(time.Millisecond), recorded),
		})
	case err != nil && strings.HasPrefix(still, "unverified"):
		p.departLocked(Departure{Kind: Unchecked, Seq: -1, Method: "exit", Text: still + "; " + recorded})
	case err != nil:
		p.departLocked(Departure{
			Kind: Missing, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server did not exit after its stdin closed: %s; %s", still, recorded),
		})
	case ex.Code != *r.ExitCode && ex.Code >= 0:
		p.departLocked(Departure{
			Kind: Different, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server %s; the recorded one exited with %d", ex, *r.ExitCode),
		})
	}
}

// exitWatch bounds how long exited watches a server that is still busy
// after the exit bound: long enough for a loaded machine to end a process,
// short of a server that never ends.
const exitWatch = 20 * time.Second

// watchExit watches a server that has not exited within d of its stdin
// closing, up to exitWatch: its exit (err nil), or the evidence that it
// stopped without ending (still says it), or, at the bound or where its
// threads cannot be seen, still starting with "unverified".
func (p *hostPlayer) watchExit(ctx context.Context, d time.Duration) (mcptest.Exit, string, error) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, exitWatch)
	defer cancel()
	a, serr := p.s.WaitStopped(wctx)
	if p.s.Stats().Exit.How != "" {
		ex, err := p.s.WaitExit(ctx)
		return ex, "", err
	}
	switch {
	case serr == nil:
		return mcptest.Exit{}, fmt.Sprintf("%v after its stdin closed it had not ended, and it %s", (d + time.Since(start)).Round(time.Millisecond), a), errors.New("not ended")
	case !a.Known:
		return mcptest.Exit{}, fmt.Sprintf("unverified: the server had not exited within %v of its stdin closing, and whether it was still ending cannot be seen (%v)", d.Round(time.Millisecond), serr), serr
	default:
		return mcptest.Exit{}, fmt.Sprintf("unverified: the server was still running and busy %v after its stdin closed (%s), when the replay's bound of %v ran out", (d + exitWatch).Round(time.Millisecond), a, exitWatch), serr
	}
}
