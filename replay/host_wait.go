package replay

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/hostctl"
)

// maxSlowWaits bounds how many times wait waits d again for a server that
// is still sending when d runs out.
const maxSlowWaits = 7

// pollInterval is how often a wait looks at the state of stdout, which
// has no event: the stall valve, bytes arriving inside a frame.
const pollInterval = 4 * time.Millisecond

// wait waits until cond holds, at most d, matching what arrives
// meanwhile; extend says a stall may be let further to get there. When d
// runs out while the server's output is still arriving (a slow server, or
// a loaded machine, not a missing message), it waits d again, at most
// maxSlowWaits times.
func (p *hostPlayer) wait(ctx context.Context, cond func() bool, d time.Duration, extend bool) (bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen, again := hostctl.Stdout(p.s).Read, 0
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		p.poll()
		if cond() {
			return true, nil
		}
		p.adjustStall(extend)
		select {
		case <-hostctl.Changed(p.s):
		case <-p.wake:
		case <-tick.C:
		case <-timer.C:
			p.poll()
			if cond() {
				return true, nil
			}
			if n := hostctl.Stdout(p.s).Read; n != seen && again < maxSlowWaits {
				seen, again = n, again+1
				timer.Reset(d)
				continue
			}
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
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
	}
	if p.armed || hostctl.Stdout(p.s).Stalled {
		p.armed = false
		p.s.ResumeReads()
	}
	if ctx.Err() != nil {
		return
	}
	var lastT, lastOut time.Duration
	for _, f := range p.rec.Host {
		lastT = max(lastT, f.T)
	}
	for _, f := range p.rec.Server {
		lastOut = max(lastOut, f.T)
	}
	all := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !slices.Contains(p.resolved, false)
	}
	began := time.Now()
	if ok, _ := p.wait(ctx, all, p.pace.bound(lastOut-lastT), false); !ok && ctx.Err() == nil {
		var js []int
		for j := range p.rec.Server {
			js = append(js, j)
		}
		why := fmt.Sprintf("did not come within %v of the host's last action", time.Since(began).Round(time.Millisecond))
		if !played {
			why = "did not come before the replay ended"
		}
		p.missing(js, why)
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
	if err == nil {
		// The exit can be seen before the host has read the last bytes
		// the server wrote: match them (a response to a cancelled
		// request, say) before the session closes, within the same
		// bound (a grandchild may hold stdout open).
		_, _ = p.wait(ectx, func() bool { return hostctl.Stdout(p.s).Ended }, d, false)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil:
		p.departLocked(Departure{
			Kind: Missing, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server did not exit within %v of its stdin closing; the recorded one exited with %d after %v", d.Round(time.Millisecond), *r.ExitCode, (r.Exit - r.HostEOF).Round(time.Millisecond)),
		})
	case ex.Code != *r.ExitCode && ex.Code >= 0:
		p.departLocked(Departure{
			Kind: Different, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server %s; the recorded one exited with %d", ex, *r.ExitCode),
		})
	}
}
