package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"

	"github.com/mcpstdio/mcpstdio/record"
)

// arm makes the host stop reading stdout where the recorded host did for
// the next stall, if there is one.
func (p *hostPlayer) arm() {
	if p.stall >= len(p.stalls) {
		return
	}
	p.armed, p.extended, p.quiet = true, 0, 0
	p.target = p.stallPoint()
	p.s.StallReadsAfter(max(0, p.target-p.s.Stdout().Read))
}

// stallPoint returns the stdout byte where the host stops for the current
// stall: the recorded point, moved by how much the last response before it
// that has come differs in its end from the recorded one.
func (p *hostPlayer) stallPoint() int64 {
	at := p.stalls[p.stall].At
	return at + p.shiftAt(at)
}

// shiftAt returns how far stdout byte at of the record is moved in the
// replay: by how much the last response before it that has come differs
// in its end from the recorded one.
func (p *hostPlayer) shiftAt(at int64) int64 {
	sh := shift{at: at, best: -1}
	for i, resp := range p.resps {
		if j := p.respFor[i]; j >= 0 && resp.size > 0 && resp.off >= 0 {
			sh.add(frameEnd(&p.rec.Server[j]), resp.off+resp.size+1)
		}
	}
	return sh.by
}

// shift finds how far a stream byte at of the record is moved in a
// replay: as far as the end of the last message before it that has come
// (a recorded end, and where it ended in the replay).
type shift struct {
	at, best, by int64
}

func (s *shift) add(recorded, replayed int64) {
	if recorded <= s.at && recorded > s.best {
		s.best, s.by = recorded, replayed-recorded
	}
}

// adjustStall keeps the armed stall at its point as responses come (their
// sizes move it), and, when extend is set and the host is waiting for
// messages the recorded host had before it stopped reading, lets 4 KiB
// more through each time the valve stops inside a frame: the server under
// test wrote more before them than the recorded one.
func (p *hostPlayer) adjustStall(extend bool) {
	if !p.armed {
		return
	}
	v := p.s.Stdout()
	if !v.Stalled {
		p.quiet = 0
		if t := p.stallPoint(); t != p.target && t > v.Read {
			p.target = t
			p.s.StallReadsAfter(t - v.Read)
		}
		return
	}
	if !extend || v.Buffered == 0 {
		p.quiet = 0
		return
	}
	// The valve stops inside a frame when the framer has taken every byte
	// let through and holds the start of a line. Its counters move while
	// it works on what it read: wait until they stand still for three
	// looks (the reader has nothing left to do), so that a frame that
	// ended at the stall point and is still being dispatched is not taken
	// for a cut one.
	if v.Framed != p.lastLook.Framed || v.Partial != p.lastLook.Partial || v.Framed < v.Read || v.Partial == 0 {
		p.lastLook, p.quiet = v, 0
		return
	}
	if p.quiet++; p.quiet < 3 {
		return
	}
	p.quiet = 0
	const step = 4 << 10
	p.extended += step
	p.s.StallReadsAfter(step)
	if p.extended == step {
		p.note(fmt.Sprintf("stall seq %d: the host read past the recorded point (stdout byte %d) to get the messages the recorded host had before it stopped", p.stalls[p.stall].Seq, p.stalls[p.stall].At))
	}
}

// stallState makes the host's action at recorded time t, if the
// recorded host took it while its reads were stalled (or it ends the
// stall), wait until the server under test has reached the state the
// recorded one had then: blocked writing stdout, or it has written what
// the recorded server had written by t (a server that writes less than a
// pipe holds past the stall point need not block). A server that does not
// get there within the bound is the StallNotBlocking departure, found
// before the action. Each stall is checked once, at the first such
// action; resume says the action is the stall's end.
func (p *hostPlayer) stallState(ctx context.Context, t time.Duration, resume bool) (checked bool, err error) {
	k := p.stall
	if !p.armed || k >= len(p.stalls) || p.checks[k].Outcome != "" {
		return false, nil
	}
	st := p.stalls[k]
	if t < st.Since || (st.Ended && t > st.Since+st.Dur) || (t == st.Since && !resume) {
		return false, nil
	}
	if p.leftOutBefore(t) {
		p.checks[k].Outcome = StallSkipped
		p.checks[k].Text = "not checked: the record has only the heads of host messages before it, which were not sent, so the server could not write what it wrote for them (record with -log-bodies)"
		return true, nil
	}
	shift := p.target - st.At
	// A server that fell behind the recorded one before (a departure
	// already reported) is measured from where it is.
	want := p.rec.wrote(record.DirOut, t) + shift - p.deficit
	capacity := int64(p.s.Stdout().Capacity)
	if capacity <= 0 {
		capacity = 64 << 10
	}
	how, measured, busy, err := p.waitState(ctx, capacity, want)
	if err != nil {
		return true, err
	}
	c := &p.checks[k]
	switch {
	case how == "" && busy != "":
		c.Outcome, c.Text = StallUnverifiable, busy
	case how != "" && p.extended > 0:
		c.Outcome, c.MovedBy = StallMoved, p.target+p.extended-st.At
		c.Text = fmt.Sprintf("the host read %d bytes past the recorded point for the messages the recorded host had before it stopped (the server wrote other output before them); then %s", p.extended, how)
	case how != "" && p.deficit > 0:
		c.Outcome, c.MovedBy = StallMoved, -p.deficit
		c.Text = fmt.Sprintf("measured %d bytes short of the recorded point, where the server had fallen behind the recorded one before: %s", p.deficit, how)
	case how != "":
		c.Outcome, c.Text = StallVerified, how
		if shift != 0 {
			c.Text += fmt.Sprintf(" (the stall point moved by %d bytes, as the server's earlier responses did)", shift)
		}
	case !measured && runtime.GOOS != "linux":
		c.Outcome = StallUnverifiable
		c.Text = fmt.Sprintf("%s shows neither pipe fill levels nor blocked threads", runtime.GOOS)
	case p.short != nil && p.short.written == p.written():
		c.Outcome = StallSkipped
		c.Text = fmt.Sprintf("the server has written nothing since stall seq %d did not block it (%d bytes): the same departure", p.short.seq, p.short.written)
	default:
		p.short = &shortfall{seq: st.Seq, written: p.written()}
		c.Outcome = StallNotReached
		c.Text = p.notBlocking(st, want)
		if !p.rules {
			p.mu.Lock()
			p.departLocked(Departure{Kind: StallNotBlocking, Seq: st.Seq, Dir: record.DirOut, Text: c.Text})
			p.mu.Unlock()
		}
		v := p.s.Stdout()
		p.deficit += max(0, want-v.Read-int64(max(v.Buffered, 0))) // later actions do not wait for it again
	}
	return true, nil
}

// notBlocking says why the server did not reach a stall's state.
func (p *hostPlayer) notBlocking(st Stall, want int64) string {
	v := p.s.Stdout()
	written := v.Read + int64(max(v.Buffered, 0))
	var why string
	if !v.Stalled {
		why = fmt.Sprintf("the host would stop reading at stdout byte %d, where the recorded host did, but the server wrote only %d bytes", p.target, v.Read)
	} else {
		why = fmt.Sprintf("the host stopped reading at stdout byte %d, where the recorded host did; the server did not block writing stdout within %v", v.Read, p.pace.bound(0))
		if v.Buffered >= 0 {
			why += fmt.Sprintf(" (its stdout pipe holds %d of %d bytes)", v.Buffered, v.Capacity)
		}
	}
	return fmt.Sprintf("%s; it had written %d bytes where the recorded server had written %d by the recorded host's next action", why, written, want)
}

// stallWatch bounds how long waitState watches a server that is still
// busy (taking or writing bytes, or using CPU: the one rule) when the
// bound passes: slow is not stopped, and a loaded machine is slow.
const stallWatch = 30 * time.Second

// judgeWindow is the window over which the one rule (mcptest.Activity)
// decides stopped or busy; an Activity over less decides neither.
const judgeWindow = 500 * time.Millisecond

// waitState waits, at most the bound, for the server to block writing
// stdout (WaitWriterBlocked's evidence, or the pipe filled to within two
// pages of capacity with reads stalled: small writes fill pipes in
// fragments, which a writer blocks on before the pipe looks full by a
// page) or to have written want bytes. how says which was seen ("" for
// neither); measured says a fill level was seen at all. A server still
// busy when the bound passes is watched on, a bound at a time, up to
// stallWatch; busy says it was still busy then ("" otherwise).
func (p *hostPlayer) waitState(ctx context.Context, capacity, want int64) (how string, measured bool, busy string, err error) {
	wctx, cancel := context.WithTimeout(ctx, stallWatch)
	defer cancel()
	found := make(chan error, 1)
	var last *mcptest.NotBlockedError
	go func() {
		d := p.pace.bound(0)
		for {
			bctx, bcancel := context.WithTimeout(wctx, d)
			err := p.s.WaitWriterBlocked(bctx)
			bcancel()
			var nb *mcptest.NotBlockedError
			if !errors.As(err, &nb) || !nb.Activity.Busy && (nb.Activity.Stopped || !nb.Activity.Known || nb.Activity.Window >= judgeWindow) {
				last = nil // blocked, stopped, or nothing more to learn
				found <- err
				return
			}
			// Busy, or watched too briefly to say (a short bound): watch
			// on, long enough for the rule to decide.
			last = nb
			if wctx.Err() != nil {
				found <- err
				return
			}
			d = max(d, 3*judgeWindow)
		}
	}()
	defer func() { cancel(); <-found }()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		v := p.s.Stdout()
		if v.Buffered >= 0 {
			measured = true
		}
		switch {
		case v.Read+int64(max(v.Buffered, 0)) >= want:
			return fmt.Sprintf("the server had written %d bytes, as the recorded one had by then (%d read, %d in the pipe)", v.Read+int64(max(v.Buffered, 0)), v.Read, max(v.Buffered, 0)), measured, "", nil
		case v.Stalled && v.Buffered > 0 && int64(v.Buffered) >= capacity-min(2*4096, capacity/4):
			return fmt.Sprintf("the server blocked writing stdout: its pipe holds %d of %d bytes with reads stalled at byte %d", v.Buffered, capacity, v.Read), true, "", nil
		}
		select {
		case err := <-found:
			found <- err // for the deferred receive
			if err == nil {
				return fmt.Sprintf("the server blocked writing stdout (%s)", p.s.Stats().WriterEvidence), true, "", nil
			}
			if ctx.Err() != nil {
				return "", measured, "", ctx.Err()
			}
			if last != nil && last.Activity.Busy {
				busy = fmt.Sprintf("unverified: the server was still busy %v after the host stopped reading, when the replay's watch ran out (%s)", stallWatch, last.Summary())
			}
			return "", measured, busy, nil
		case <-tick.C:
		}
	}
}

// skipStalls reports the stalls the replay did not get to.
func (p *hostPlayer) skipStalls(why string) {
	for k := range p.checks {
		if c := &p.checks[k]; c.Outcome == "" {
			c.Outcome, c.Text = StallSkipped, why
		}
	}
}

// wrote returns how many bytes of stream d had been written by t: at
// least what the proxy had read of them.
func (r *Record) wrote(d string, t time.Duration) int64 {
	var n int64
	for _, c := range r.Chunks {
		if c.Dir == d && c.T <= t {
			n = max(n, c.Off+c.N)
		}
	}
	return n
}

// waitWritten makes the host's action at recorded time t wait until the
// server under test has written what the recorded server had written by
// then (moved as its earlier responses were), or is blocked writing
// behind a stalled host: the action then reaches the server in the state
// the recorded one was in (a cancel sent while the recorded server was
// writing its result still finds the result written). What the recorded
// server wrote before t cannot depend on what the host did at t, so this
// never waits for a cause that comes later. A server that does not get
// there within the bound is not a departure by itself (its output will
// be); the action goes on.
func (p *hostPlayer) waitWritten(ctx context.Context, t time.Duration) error {
	w := p.rec.wrote(record.DirOut, t)
	if w == 0 || p.leftOutBefore(t) {
		return nil // what it wrote may answer what the replay could not send
	}
	want := w + p.shiftAt(w) - p.deficit
	reached := func() bool {
		v := p.s.Stdout()
		written := v.Read + int64(max(v.Buffered, 0))
		full := v.Stalled && v.Buffered > 0 && v.Capacity > 0 && v.Buffered >= v.Capacity-min(2*4096, v.Capacity/4)
		return written >= want || full || v.Ended
	}
	ok, _, err := p.wait(ctx, reached, p.pace.bound(0), false)
	if !ok && err == nil {
		// The server writes less than the recorded one: later actions
		// expect it to stay that much behind, not wait for it again.
		v := p.s.Stdout()
		p.deficit += max(0, want-v.Read-int64(max(v.Buffered, 0)))
	}
	return err
}

// shortfall is where a stall found the server short of the recorded
// state.
type shortfall struct {
	seq     int64
	written int64
}

// written returns how many bytes of stdout the server has written: read,
// and waiting in the pipe.
func (p *hostPlayer) written() int64 {
	v := p.s.Stdout()
	return v.Read + int64(max(v.Buffered, 0))
}

// leftOutBefore reports whether a host message before t was left out of
// the replay (the record has only its head).
func (p *hostPlayer) leftOutBefore(t time.Duration) bool {
	for _, f := range p.rec.Host {
		if f.T0 <= t && !f.Whole() && f.Kind != record.KindResponse && f.Kind != record.KindError {
			return true
		}
	}
	return false
}
