package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

// index sorts the record's server frames into what will match them, and
// pairs each host request with its recorded response.
func (p *hostPlayer) index() {
	r := p.rec
	respQ := map[string][]int{} // responses by id, in order
	for j, f := range r.Server {
		if f.Gap {
			// Nothing in particular is expected there.
			p.gaps = append(p.gaps, j)
			p.resolved[j] = true
			p.departLocked(Departure{
				Kind: Unchecked, Seq: f.Seq, Dir: record.DirOut,
				Text: fmt.Sprintf("the proxy's observer lost detail here (%d bytes from stdout byte %d): what the server sent in them is not known, and what comes in their place is not checked", f.Size, f.Off),
			})
			continue
		}
		switch f.Kind {
		case record.KindResponse, record.KindError:
			respQ[wire.Key(f.ID)] = append(respQ[wire.Key(f.ID)], j)
		case record.KindNotification:
			p.noteQ[f.Method] = append(p.noteQ[f.Method], j)
		case record.KindRequest:
			p.srqQ[f.Method] = append(p.srqQ[f.Method], j)
		default:
			p.junkQ = append(p.junkQ, j)
		}
	}
	for i, f := range r.Host {
		if id, ok := (&wire.Message{ID: f.ID}).IntID(); ok {
			p.nextID = max(p.nextID, id)
		}
		switch f.Kind {
		case record.KindRequest:
			k := wire.Key(f.ID)
			p.respFor[i] = -1
			if q := respQ[k]; len(q) > 0 {
				p.respFor[i], respQ[k] = q[0], q[1:]
			}
		case record.KindResponse, record.KindError:
			p.answers[wire.Key(f.ID)] = i
		}
	}
	for _, q := range respQ {
		p.unkQ = append(p.unkQ, q...) // answers to requests the host never sent
	}
	for i, j := range p.respFor {
		if j >= 0 {
			p.reqOf[j] = i
		}
	}
	for i, f := range r.Host {
		switch {
		case f.Kind == record.KindRequest && len(f.Token) > 0:
			p.tokenReq[wire.Key(f.Token)] = i
		case f.Kind == record.KindNotification && f.Method == wire.MethodCancelled && f.Whole():
			rid := wire.Key(wire.Member(wire.Member(f.body(), "params"), "requestId"))
			for k := i - 1; k >= 0; k-- {
				if g := &r.Host[k]; g.Kind == record.KindRequest && wire.Key(g.ID) == rid {
					p.cancelOf[i] = k
					if _, ok := p.cancelAt[k]; !ok {
						p.cancelAt[k] = f.T0
					}
					break
				}
			}
		}
	}
}

// play does the recorded host's actions.
func (p *hostPlayer) play(ctx context.Context) error {
	p.arm()
	c := clock{pace: p.pace}
	for _, a := range schedule(p.rec, []string{record.DirIn}, p.rec.Host, p.stalls, p.rec.HostEOF) {
		err := c.next(ctx, a.t, func(gap time.Duration) error {
			if err := p.waitDeps(ctx, a.t, gap); err != nil {
				return err
			}
			checked, err := p.stallState(ctx, a.t, a.resume >= 0)
			if err == nil && a.resume >= 0 {
				err = p.judgeReads(ctx) // before the host reads again
			}
			if checked || err != nil {
				return err
			}
			if a.stall >= 0 || a.resume >= 0 {
				return nil // the host's reads, not something the server gets
			}
			return p.waitWritten(ctx, a.t)
		})
		if err != nil {
			return err
		}
		if err := p.do(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// do does one action.
func (p *hostPlayer) do(ctx context.Context, a action) error {
	switch {
	case a.chunk != nil:
		var frames []int
		for _, part := range a.chunk.Parts {
			if part.Frame >= 0 {
				frames = append(frames, part.Frame)
			}
		}
		p.measure(ctx, frames)
		b, _ := p.rec.ChunkBytes(a.chunk, p.line)
		var ended []int // frames whose last byte this write carries
		for _, part := range a.chunk.Parts {
			if part.Frame >= 0 && !p.rec.Host[part.Frame].Whole() {
				p.leftOut(part.Frame)
			} else if part.Frame >= 0 && int64(part.To) >= p.rec.Host[part.Frame].Size {
				ended = append(ended, part.Frame)
			}
		}
		before := p.written()
		err := p.write(ctx, a.chunk.Seq, b)
		p.sent(ctx, ended, before)
		return err
	case a.frame >= 0:
		if !p.rec.Host[a.frame].Whole() {
			p.leftOut(a.frame)
			return nil
		}
		p.measure(ctx, []int{a.frame})
		before := p.written()
		err := p.write(ctx, p.rec.Host[a.frame].Seq, p.line(a.frame, &p.rec.Host[a.frame]))
		p.sent(ctx, []int{a.frame}, before)
		return err
	case a.stall >= 0:
		// Reads stop at the stall's point (arm); its state is checked
		// before the host's next action (stallState).
		p.inStall, p.stallIn, p.stallIns = true, 0, 0
	case a.resume >= 0:
		p.s.ResumeReads()
		p.armed, p.inStall = false, false
		p.readsResumed(ctx)
		p.stall = a.resume + 1
		p.arm()
		return p.writeDeferred(ctx)
	case a.close:
		if err := p.waitWatches(ctx); err != nil {
			return err
		}
		if err := p.s.CloseStdin(); err != nil && !errors.Is(err, mcptest.ErrClosed) {
			return err
		}
	}
	return nil
}

// write writes one chunk of the host's bytes.
func (p *hostPlayer) write(ctx context.Context, seq int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if p.rules && p.inStall {
		return p.writeInStall(ctx, b)
	}
	err := p.s.WriteStdin(ctx, b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.report.Played++
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p.rules {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("seq %d: the server did not take the host's write of %d bytes (the rest goes with the next write): %v", seq, len(b), err))
		return nil
	}
	p.departLocked(Departure{
		Kind: Missing, Seq: seq, Dir: record.DirIn,
		Text: fmt.Sprintf("the server did not take the host's write of %d bytes: %v", len(b), err),
	})
	return nil
}

// leftOut reports a host frame the record has only the head of.
func (p *hostPlayer) leftOut(i int) {
	if p.hostDrops[i] {
		return
	}
	p.hostDrops[i] = true
	f := &p.rec.Host[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rules {
		what := "message"
		switch {
		case f.Kind == record.KindRequest:
			what = "request"
		case f.Method == wire.MethodCancelled:
			what = "cancel"
		case f.Kind == record.KindNotification:
			what = "notification"
		}
		p.report.Unplayed = append(p.report.Unplayed, Unplayed{Seq: f.Seq, What: what,
			Why: fmt.Sprintf("%s %s: the record has only its head (%d of %d bytes; record with mcpstdio proxy -log-bodies)", f.Method, f.ID, len(f.Head), f.Size)})
	} else {
		p.departLocked(Departure{
			Kind: Unchecked, Seq: f.Seq, Dir: record.DirIn, Method: f.Method, ID: f.ID,
			Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): not sent", len(f.Head), f.Size),
		})
	}
	if j, ok := p.respFor[i]; ok && j >= 0 {
		p.resolved[j] = true // its answer cannot come
	}
	// Nor can its progress: take the recorded notifications that carry
	// its token out of the ones to match. (Other notifications it caused,
	// such as log messages, cannot be told from the rest.)
	if len(f.Token) == 0 {
		return
	}
	q := p.noteQ[wire.MethodProgress]
	kept, n := q[:0], 0
	for _, j := range q {
		if g := &p.rec.Server[j]; wire.Key(g.Token) == wire.Key(f.Token) {
			p.resolved[j] = true
			n++
			continue
		}
		kept = append(kept, j)
	}
	p.noteQ[wire.MethodProgress] = kept
	if n > 0 && !p.rules {
		p.departLocked(Departure{
			Kind: Unchecked, Seq: f.Seq, Dir: record.DirOut, Method: wire.MethodProgress, ID: f.ID,
			Text: fmt.Sprintf("%d progress notifications for this request, which was not sent, not expected", n),
		})
	}
}

// line returns the line to write for host frame i: a request with the id
// it is sent under (entered as pending first), a cancel naming that id,
// nothing for the recorded host's answers to server requests (the handler
// sends them).
func (p *hostPlayer) line(i int, f *Frame) []byte {
	if l, ok := p.lines[i]; ok {
		return l
	}
	l := f.Line()
	switch f.Kind {
	case record.KindRequest:
		l = p.request(i, f, l)
	case record.KindNotification:
		if f.Method != wire.MethodCancelled {
			break
		}
		// The cancel names the latest request sent with that id.
		rid := wire.Member(wire.Member(f.body(), "params"), "requestId")
		at := -1
		for k := range p.sentIDs {
			if k > at && wire.Key(p.rec.Host[k].ID) == wire.Key(rid) {
				at = k
			}
		}
		if at >= 0 {
			if raw := strconv.AppendInt(nil, p.sentIDs[at], 10); string(raw) != string(rid) {
				l = f.LineWith(raw, "params", "requestId")
			}
		}
	case record.KindResponse, record.KindError:
		l = nil
	}
	p.lines[i] = l
	return l
}

// request enters host request i as pending under the id it is sent with
// (the recorded one, unless it was a string or used before) and returns
// its line l with that id.
func (p *hostPlayer) request(i int, f *Frame, l []byte) []byte {
	id, ok := (&wire.Message{ID: f.ID}).IntID()
	if !ok || p.usedIDs[id] {
		for p.nextID++; p.usedIDs[p.nextID]; p.nextID++ {
		}
		id = p.nextID
	}
	p.usedIDs[id] = true
	pd, err := p.s.Expect(id, f.Method, wire.Member(f.body(), "params"))
	if err != nil {
		p.checked[i] = true
		p.response(i, nil, err)
	} else {
		p.pend[i] = pd
		p.sentIDs[i] = id
		p.watchRequest(i, pd)
	}
	if raw := strconv.AppendInt(nil, id, 10); string(raw) != string(f.ID) {
		l = f.LineWith(raw, "id")
	}
	return l
}

// depsOf returns the recorded server frames the host could have had at t:
// read whole by the proxy by then (the proxy stamps a read before it
// starts writing it on, so what the host acted on was stamped before its
// action; the end of the write is stamped after, sometimes after the host
// already acted) and, while a stall held (up to and with the host's
// resume, which it did without what the proxy read meanwhile), before the
// point where the host stopped reading. A frame the host did not wait for costs only a wait
// for what the server sends anyway.
func (p *hostPlayer) depsOf(t time.Duration) []int {
	limit := int64(-1)
	for _, st := range p.stalls {
		if st.Since <= t && (!st.Ended || t <= st.Since+st.Dur) {
			limit = st.At
		}
	}
	var out []int
	for j, f := range p.rec.Server {
		if f.T <= t && !f.Unterminated && (limit < 0 || f.Off+f.Size <= limit) && !p.afterCancel(j) {
			out = append(out, j)
		}
	}
	return out
}

// afterCancel reports whether, judging by the rules, recorded server frame
// j need not come: a response to a request, or a progress notification of
// one, that began after the recorded host cancelled the request (a server
// that honours the cancel does not send it).
func (p *hostPlayer) afterCancel(j int) bool {
	if !p.rules {
		return false
	}
	f := &p.rec.Server[j]
	i, ok := p.reqOf[j]
	if !ok && f.Kind == record.KindNotification && f.Method == wire.MethodProgress && len(f.Token) > 0 {
		i, ok = p.tokenReq[wire.Key(f.Token)]
	}
	if !ok {
		return false
	}
	at, cancelled := p.cancelAt[i]
	return cancelled && at <= f.T0
}

// waitDeps waits for the server frames the recorded host had before
// acting at t; those that do not come within the bound of the longest
// time one of them took in the record (from the host's last action before
// it began to its end; at most the gap before this action, so that a
// user's idle minutes in the field are not waited out) are reported
// Missing.
func (p *hostPlayer) waitDeps(ctx context.Context, t, gap time.Duration) error {
	deps := p.depsOf(t)
	var took time.Duration
	for _, j := range deps {
		took = max(took, p.latency[j])
	}
	gap = min(gap, took)
	began := time.Now()
	unresolved := func() []int {
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []int
		for _, j := range deps {
			if !p.resolved[j] {
				out = append(out, j)
			}
		}
		return out
	}
	w, err := p.waitJudged(ctx, func() bool { return len(unresolved()) == 0 }, p.pace.bound(gap), true)
	if w.ok || err != nil {
		return err
	}
	p.notCome(unresolved(), fmt.Sprintf("did not come within %v", time.Since(began).Round(time.Millisecond)), w)
	return nil
}

// latencies returns how long each recorded server frame took: from the
// host's last action (a write, or a frame's first byte) before its first
// byte to its last byte.
func latencies(rec *Record) []time.Duration {
	acts := hostActs(rec)
	out := make([]time.Duration, len(rec.Server))
	for j, f := range rec.Server {
		var from time.Duration
		if k, _ := slices.BinarySearch(acts, f.T0+1); k > 0 {
			from = acts[k-1] // the last at or before f.T0
		}
		out[j] = max(f.T-from, 0)
	}
	return out
}

// notCome reports the recorded server frames js that did not come, as
// the wait for them ended: missing, with the evidence where the server was
// seen to stop, or unchecked when it was still busy when the replay's
// watch ran out (slow, not missing).
func (p *hostPlayer) notCome(js []int, why string, w waited) {
	if p.rules {
		// Not a departure: the rules judge what the server did.
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, j := range js {
			p.resolved[j] = true
		}
		return
	}
	kind := Missing
	switch {
	case w.busy:
		kind = Unchecked
		why = fmt.Sprintf("unverified: %s, the server still busy (its output arriving, or CPU demand, or a process it started at work) when the replay's watch of %v ran out", why, slowWatch)
	case w.stopped != nil:
		why = fmt.Sprintf("%s, and the server %s", why, w.stopped)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range js {
		if p.resolved[j] {
			continue
		}
		p.resolved[j] = true
		f := &p.rec.Server[j]
		d := Departure{Kind: kind, Seq: f.Seq, Dir: record.DirOut, Method: f.Method, ID: f.ID, Text: "the " + f.Kind + " " + why}
		if f.Kind == record.KindResponse || f.Kind == record.KindError {
			d.Method = p.requestMethod(j)
			d.Text = "the response " + why
		}
		p.departLocked(d)
	}
}

// requestMethod returns the method of the host request server frame j
// answers.
func (p *hostPlayer) requestMethod(j int) string {
	for i, r := range p.respFor {
		if r == j {
			return p.rec.Host[i].Method
		}
	}
	return ""
}
