package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Judging the server under test by the rules (the default; Same compares
// instead). The one stopped/slow rule is mcptest's (Session.WaitStopped,
// Activity): stopped is seen, with its evidence, or the verdict is
// unverified; a bound the replay runs out of is the replay's, never the
// server's fault.

// lineLen returns the length of f's line as the record has it (its body
// after redaction and its terminator), or -1 if the record has not the
// body.
func (f *Frame) lineLen() int {
	n := len(f.Body)
	switch {
	case f.Body == nil && f.stored.s != nil:
		n = f.stored.n
	case f.Body == nil:
		return -1
	}
	switch {
	case f.Unterminated:
	case f.CRLF:
		n += 2
	default:
		n++
	}
	return n
}

// sent notes the host frames whose last byte was just written: the
// requests the replay has sent, and the cancels; written is how many bytes
// of stdout the server had written before the write.
func (p *hostPlayer) sent(ctx context.Context, frames []int, written int64) {
	if !p.rules {
		return
	}
	now := time.Now()
	for _, i := range frames {
		f := &p.rec.Host[i]
		switch {
		case f.Kind == record.KindRequest:
			p.mu.Lock()
			_, ok := p.sentIDs[i]
			if ok {
				p.sentAt[i] = now
			}
			p.mu.Unlock()
			if ok {
				p.observe(ctx, i)
			}
		case f.Kind == record.KindNotification && f.Method == wire.MethodCancelled:
			k, ok := p.cancelOf[i]
			if !ok {
				break
			}
			p.mu.Lock()
			_, sent := p.sentAt[k]
			_, twice := p.cancelled[k]
			if sent && !twice {
				p.cancelled[k] = now
			}
			p.mu.Unlock()
			if sent && !twice {
				p.cancelSent(ctx, k, i, now, written)
			}
		}
	}
}

// writeInStall writes host bytes while the host's reads are stopped: the
// reads rule's subject. A write the server does not take within the bound
// (its stdin pipe full) is judged at once; once the server is judged
// stopped, the rest of the stall's writes wait for its end.
func (p *hostPlayer) writeInStall(ctx context.Context, b []byte) error {
	if len(p.deferred) > 0 {
		p.deferred = append(p.deferred, b)
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, p.pace.bound(0))
	before := p.s.Stats().StdinBytes
	err := p.s.WriteStdin(wctx, b)
	cancel()
	taken := p.s.Stats().StdinBytes - before
	p.stallIn += int64(len(b))
	p.stallIns++
	if taken > 0 {
		p.mu.Lock()
		p.report.Played++
		p.mu.Unlock()
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// Part taken: mcptest keeps the rest, to go first with the next
	// write (an empty one flushes it). None taken: all of it waits. The
	// stall's next writes wait for its end too.
	if taken == 0 {
		p.deferred = append(p.deferred, b)
	} else {
		p.deferred = append(p.deferred, []byte{})
	}
	return p.judgeReads(ctx)
}

// writeDeferred writes what writeInStall held, after the stall.
func (p *hostPlayer) writeDeferred(ctx context.Context) error {
	ws := p.deferred
	p.deferred = nil
	for _, b := range ws {
		if len(b) == 0 {
			if err := p.s.WriteStdin(ctx, nil); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if err := p.write(ctx, -1, b); err != nil {
			return err
		}
	}
	return nil
}

// judgeReads judges the reads rule at the current stall, once, if the
// host wrote while its reads were stopped: the server's stdout must be
// blocked (WaitWriterBlocked, else the rule cannot fail here), and then it
// must have taken every byte from its stdin pipe. Stopped by the one rule
// with bytes waiting fails, with that evidence, as the reads-while-blocked
// criterion does; still busy with bytes waiting when the watch ends is
// unverified (slow is not stopped).
func (p *hostPlayer) judgeReads(ctx context.Context) error {
	k := p.stall
	if !p.rules || !p.inStall || k >= len(p.stalls) || p.judged[k] || p.stallIn == 0 {
		return nil
	}
	p.judged[k] = true
	st := p.stalls[k]
	if st.Fault == "" && st.Dur < judgeWindow {
		// Too short in the record for the recorded server to have been
		// seen stopped in it (a write of the proxy that took a moment
		// while the host acted): the replay does not hold the host's
		// reads longer than that to judge the server.
		return nil
	}
	fd := Finding{Rule: RuleReadsWhileBlocked, Seq: st.Seq, T: st.Since}
	what := fmt.Sprintf("the %d bytes the host wrote (%s) while its reads were stopped at stdout byte %d", p.stallIn, plural(p.stallIns, "write"), p.target)
	if st.Fault != "" {
		what += " (the proxy's fault " + st.Fault + ")"
	}
	bctx, cancel := context.WithTimeout(ctx, p.pace.bound(0))
	berr := p.s.WaitWriterBlocked(bctx)
	cancel()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if berr != nil {
		var nb *mcptest.NotBlockedError
		seen := berr.Error()
		if errors.As(berr, &nb) {
			seen = nb.Summary()
		}
		fd.Verdict, fd.Text = Pass, fmt.Sprintf("its stdout was not blocked at this stall (%s): the rule, which asks a server blocked writing to read on, does not apply (%s)", seen, what)
		p.find(fd)
		return nil
	}
	blocked := p.s.Stats().WriterEvidence.String()
	a, err := p.watchStdin(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case a.StdinWaiting == 0:
		fd.Verdict, fd.Text = Pass, fmt.Sprintf("its stdout blocked (%s), the server took from its stdin pipe all %s; %s", blocked, what, a)
	case err == nil && a.StdinWaiting > 0:
		fd.Verdict, fd.Text = Fail, fmt.Sprintf("the server stopped taking stdin while its stdout was blocked: of %s, %d wait in its stdin pipe; %s; blocked: %s", what, a.StdinWaiting, a, blocked)
	case !a.Known:
		fd.Verdict, fd.Text = Unverified, fmt.Sprintf("of %s, %d wait in its stdin pipe after %v, its stdout blocked (%s); whether it stopped cannot be seen here (%v)", what, a.StdinWaiting, a.Window.Round(time.Millisecond), blocked, err)
	default:
		fd.Verdict, fd.Text = Unverified, fmt.Sprintf("slow, not stopped: of %s, %d still wait in its stdin pipe after %v, and it was busy all the while (%s); blocked: %s", what, a.StdinWaiting, a.Window.Round(time.Millisecond), a, blocked)
	}
	p.find(fd)
	return nil
}

// watchStdin watches the server until it has taken everything from its
// stdin pipe (StdinWaiting 0) or is stopped by the one rule (err nil),
// up to stallWatch while it is busy; the Activity is the last look's, or
// the whole watch's.
func (p *hostPlayer) watchStdin(ctx context.Context) (mcptest.Activity, error) {
	wctx, cancel := context.WithTimeout(ctx, stallWatch)
	defer cancel()
	for {
		// A bound at a time: a server that took the bytes and is busy
		// passes at the end of one, without waiting for it to stop.
		bctx, bcancel := context.WithTimeout(wctx, max(p.pace.bound(0), 3*judgeWindow))
		a, err := p.s.WaitStopped(bctx)
		bcancel()
		switch {
		case err == nil, a.StdinWaiting == 0, wctx.Err() != nil:
			return a, err
		case !a.Known:
			// Nothing to wait on: look at the pipe once more, a bound
			// later.
			_ = bound.Pass(wctx, p.pace.bound(0))
			a2, err2 := p.s.WaitStopped(wctx)
			a2.Window = a.Window + p.pace.bound(0)
			return a2, errors.Join(err, err2)
		case p.s.Stats().Exit.How != "":
			return a, err
		}
	}
}

// find adds a finding to the report.
func (p *hostPlayer) find(f Finding) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report.Findings = append(p.report.Findings, f)
}

// judgeAnswers waits for the answer to every request the replay sent and
// did not cancel, and judges the answered rule for each: answered passes;
// not answered fails when the server ended, or is stopped by the one rule
// (with the evidence), and is unverified while it is busy.
func (p *hostPlayer) judgeAnswers(ctx context.Context, bound time.Duration) {
	waiting := func() []int {
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []int
		for i := range p.sentAt {
			if _, ok := p.answered[i]; !ok {
				if _, c := p.cancelled[i]; !c {
					out = append(out, i)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	p.wait(ctx, func() bool { return len(waiting()) == 0 }, bound, false)
	if ctx.Err() != nil {
		return
	}
	not := waiting()
	answered := 0
	p.mu.Lock()
	for i := range p.sentAt {
		if _, ok := p.answered[i]; ok {
			if _, c := p.cancelled[i]; !c {
				answered++
			}
		}
	}
	p.report.answered = answered
	p.mu.Unlock()
	if len(not) == 0 {
		if answered > 0 {
			last := -1
			for i := range p.sentAt {
				last = max(last, i)
			}
			f := &p.rec.Host[last]
			p.find(Finding{Rule: RuleAnswered, Verdict: Pass, Seq: f.Seq, T: f.T0,
				Text: fmt.Sprintf("every request the host sent and did not cancel was answered (%d)", answered)})
		}
		return
	}
	var why string
	verdict := Fail
	if ex := p.s.Stats().Exit; ex.How != "" {
		why = fmt.Sprintf("the server ended (%s)", ex)
	} else if p.s.Stdout().Ended {
		why = "the server closed its stdout"
	} else {
		a, err := p.s.WaitStopped(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
			why = fmt.Sprintf("the server is stopped: %s", a)
		case p.s.Stats().Exit.How != "":
			why = fmt.Sprintf("the server ended (%s)", p.s.Stats().Exit)
		case !a.Known:
			verdict, why = Unverified, fmt.Sprintf("whether the server stopped cannot be seen here (%v)", err)
		default:
			verdict, why = Unverified, fmt.Sprintf("the server was still busy when the replay's bound ran out (%s): slow, not stopped", a)
		}
	}
	for _, i := range not {
		f := &p.rec.Host[i]
		text := fmt.Sprintf("not answered %v after it was sent, and %s", time.Since(p.sentAt[i]).Round(time.Millisecond), why)
		if p.respFor[i] < 0 {
			text += " (the recorded server did not answer it either)"
		}
		p.find(Finding{Rule: RuleAnswered, Verdict: verdict, Seq: f.Seq, T: f.T0, Method: f.Method, ID: f.ID, Text: text})
	}
}
