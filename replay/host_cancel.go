package replay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/cancelrule"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// RuleCancel: a request the host cancelled is judged by package
// cancelrule, as the criteria judge it: the work went on fails, it stopped
// but was answered warns, it stopped and stayed silent passes; nothing to
// tell by is unverified. A cancel that came once the server had begun
// writing the response is tolerated (the host must take the race), and
// passes.
const RuleCancel = "cancel"

// cancelWatch follows one request the recorded host cancelled: what the
// server did before (its baseline at the request, the call's signature at
// work until the cancel) and after (cancelrule.Watch).
type cancelWatch struct {
	req, cancel int // host frames: the request, its cancel
	pend        *mcptest.Pending
	base        cancelrule.Baseline

	stopObserve context.CancelFunc
	observed    chan cancelrule.Signature

	sent    time.Time // when the cancel was written
	written int64     // stdout bytes the server had written then
	held    bool      // written while the host's reads were stopped: watched from when they resumed
	from    time.Time // when the watch began
	seen    *cancelrule.Seen
	sig     cancelrule.Signature
	watched chan struct{} // closed when Watch returned
}

// backgroundWindow is how long the server's own CPU use is measured
// before a request the recorded host cancelled is sent, as the criteria
// measure it: twice the cancel's grace.
const backgroundWindow = 400 * time.Millisecond

// measure takes the server's baseline before host frames are written, for
// each request among them that the recorded host cancelled: its own CPU
// use over backgroundWindow (which delays the write by as much).
func (p *hostPlayer) measure(ctx context.Context, frames []int) {
	if !p.rules {
		return
	}
	for _, i := range frames {
		if _, ok := p.cancelAt[i]; !ok || p.bases[i] != nil || p.rec.Host[i].Kind != record.KindRequest {
			continue
		}
		b := cancelrule.Measure(ctx, p.s, backgroundWindow)
		p.bases[i] = &b
	}
}

// watchRequest starts following request i, which the recorded host
// cancelled, as it is sent: the server's baseline from before (measure),
// then the call observed at work until its cancel is sent.
func (p *hostPlayer) watchRequest(i int, pd *mcptest.Pending) {
	b := p.bases[i]
	if !p.rules || b == nil {
		return
	}
	p.cws[i] = &cancelWatch{req: i, pend: pd, base: *b}
}

// observe starts observing the call of request i at work, once it was
// written.
func (p *hostPlayer) observe(ctx context.Context, i int) {
	w := p.cws[i]
	if w == nil || w.observed != nil {
		return
	}
	octx, stop := context.WithCancel(ctx)
	w.stopObserve, w.observed = stop, make(chan cancelrule.Signature, 1)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// Until the cancel: Observe ends at three progress notifications,
		// the response, or the stop.
		w.observed <- cancelrule.Observe(octx, p.s, w.pend, w.base, stallWatch)
	}()
}

// cancelSent starts watching request i's work after the cancel in host
// frame k was written, the server having written written bytes of stdout
// just before. A cancel written while the host's reads were stopped is
// watched from when they resume: until then nothing the server writes can
// arrive, and what arrives at once then (a response that waited for the
// host to read, its work perhaps done before the cancel) is no evidence
// that the work went on.
func (p *hostPlayer) cancelSent(ctx context.Context, i, k int, at time.Time, written int64) {
	w := p.cws[i]
	if w == nil || w.sent != (time.Time{}) {
		return
	}
	w.cancel, w.sent, w.written, w.held = k, at, written, p.inStall
	w.sig = cancelrule.Unknown()
	if w.observed != nil {
		w.stopObserve()
		w.sig = <-w.observed
	}
	if !w.held {
		p.startWatch(ctx, w, at)
	}
}

// startWatch starts cancelrule.Watch for w, its grace timed from from.
func (p *hostPlayer) startWatch(ctx context.Context, w *cancelWatch, from time.Time) {
	w.from, w.watched = from, make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(w.watched)
		w.seen, _ = cancelrule.Watch(ctx, p.s, w.pend, w.base, cancelrule.Config{Sent: from})
	}()
}

// readsResumed starts watching the cancels written while the host's reads
// were stopped.
func (p *hostPlayer) readsResumed(ctx context.Context) {
	now := time.Now()
	for _, w := range p.cws {
		if w.held && w.watched == nil {
			p.startWatch(ctx, w, now)
		}
	}
}

// waitWatches waits for the cancel watches begun so far to end: the
// host's close of stdin waits for them, since a server that exits on it
// could no longer be watched.
func (p *hostPlayer) waitWatches(ctx context.Context) error {
	for _, w := range p.cws {
		if w.watched == nil {
			continue
		}
		select {
		case <-w.watched:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// judgeCancels waits for the watches and judges each cancel the replay
// sent.
func (p *hostPlayer) judgeCancels(ctx context.Context) {
	for _, w := range p.cws {
		if w.stopObserve != nil {
			w.stopObserve()
		}
		if w.watched == nil {
			continue
		}
		select {
		case <-w.watched:
		case <-ctx.Done():
			return
		}
		if w.seen == nil {
			continue
		}
		p.find(p.judgeCancel(w))
	}
}

// judgeCancel judges one cancel.
func (p *hostPlayer) judgeCancel(w *cancelWatch) Finding {
	req, c := &p.rec.Host[w.req], &p.rec.Host[w.cancel]
	f := Finding{Rule: RuleCancel, Seq: c.Seq, T: c.T0, Method: req.Method, ID: req.ID}
	var resp *mcptest.Response
	select {
	case <-w.pend.Done():
		resp, _ = w.pend.Wait(context.Background())
	default:
	}
	if resp != nil && resp.Offset < w.written {
		f.Verdict, f.Text = Pass, fmt.Sprintf("the cancel came once the server had begun writing the response (its first byte at stdout byte %d, the server had written %d by the cancel): a race the host must tolerate; %s", resp.Offset, w.written, resp)
		return f
	}
	o := w.seen.Judge(w.sig, 0)
	if w.held {
		o.Evidence += fmt.Sprintf(" (times from when the host read again, %v after the cancel, which it sent while its reads were stopped)", w.from.Sub(w.sent).Round(time.Millisecond))
	}
	if seen, _ := w.seen.Answered(); !seen && resp != nil && !w.held {
		// Answered after the watch: what the watch did not see.
		later := fmt.Sprintf("the cancelled request was answered later, with %s", resp)
		switch {
		case o.Verdict == cancelrule.WentOn:
			o.Evidence += "; " + later
		case resp.Error == nil && string(wire.Member(resp.Result, "isError")) != "true":
			o = cancelrule.Outcome{Verdict: cancelrule.WentOn, Evidence: "work went on after notifications/cancelled: " + later + ", not an error: its work ran to the end; " + o.Evidence}
		case o.Verdict == cancelrule.Stopped:
			o.Verdict, o.Evidence = cancelrule.StoppedAnswered, o.Evidence+"; but "+later
		default:
			o.Evidence += "; " + later
		}
	}
	f.Text = o.Evidence
	switch o.Verdict {
	case cancelrule.WentOn:
		f.Verdict = Fail
	case cancelrule.StoppedAnswered:
		f.Verdict = Warn
	case cancelrule.Stopped:
		f.Verdict = Pass
	default:
		f.Verdict = Unverified
	}
	return f
}

// cancelWatches are the player's cancel watches and their goroutines.
type cancelWatches struct {
	bases map[int]*cancelrule.Baseline // by host request frame
	cws   map[int]*cancelWatch         // by host request frame
	wg    sync.WaitGroup
}
