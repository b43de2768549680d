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

// slowWatch bounds how long wait waits on, d at a time, for a server that
// is still sending when d runs out (busy by the one rule: bytes arriving):
// long enough for a loaded machine, short of a server that never ends.
const slowWatch = 30 * time.Second

// pollInterval is how often a wait looks at the state of stdout, which
// has no event: the stall valve, bytes arriving inside a frame.
const pollInterval = 4 * time.Millisecond

// wait waits until cond holds, at most d, matching what arrives
// meanwhile; extend says a stall may be let further to get there. When d
// runs out while the server's output is still arriving (a slow server, or
// a loaded machine, not a missing message), it waits d again, up to
// slowWatch in all; busy says it gave up there with output still arriving:
// what did not come is then unverified, the harness's bound, not missing.
func (p *hostPlayer) wait(ctx context.Context, cond func() bool, d time.Duration, extend bool) (ok, busy bool, err error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen, began := p.s.Stdout().Read, time.Now()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		p.poll()
		if cond() {
			return true, false, nil
		}
		p.adjustStall(extend)
		select {
		case <-p.s.Changed():
		case <-p.wake:
		case <-tick.C:
		case <-timer.C:
			p.poll()
			if cond() {
				return true, false, nil
			}
			if n := p.s.Stdout().Read; n != seen {
				if time.Since(began) >= slowWatch {
					return false, true, nil
				}
				seen = n
				timer.Reset(d)
				continue
			}
			return false, false, nil
		case <-ctx.Done():
			return false, false, ctx.Err()
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
	if ok, busy, _ := p.wait(ctx, all, p.pace.bound(lastOut-lastT), false); !ok && ctx.Err() == nil {
		var js []int
		for j := range p.rec.Server {
			js = append(js, j)
		}
		why := fmt.Sprintf("did not come within %v of the host's last action", time.Since(began).Round(time.Millisecond))
		if !played {
			why = "did not come before the replay ended"
		}
		p.notCome(js, why, busy)
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
