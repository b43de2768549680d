package replay

import (
	"context"
	"fmt"
	"runtime"
	"time"

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
	p.s.StallReadsAfter(max(0, p.target-p.s.StdoutState().Read))
}

// stallPoint returns the stdout byte where the host stops for the current
// stall: the recorded point, moved by how much the last response before it
// that has come differs in its end from the recorded one.
func (p *hostPlayer) stallPoint() int64 {
	st := p.stalls[p.stall]
	var shift, best int64 = 0, -1
	for i, resp := range p.resps {
		j := p.respFor[i]
		if j < 0 || resp.Size == 0 || resp.Offset < 0 {
			continue
		}
		f := &p.rec.Server[j]
		if end := frameEnd(f); end <= st.At && end > best {
			best = end
			shift = resp.Offset + resp.Size + 1 - end
		}
	}
	return st.At + shift
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
	v := p.s.StdoutState()
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

// blocked checks, when the recorded host's stall began, that the server
// under test blocks writing its stdout. The record shows only that the
// proxy's write to the host blocked, not the server's own; but a server
// that had, as recorded, begun messages of at least twice the pipe's
// capacity past the point where the host stopped (before the host
// resumed) must block in the replay, whose one pipe cannot hold them. The
// check is made only then (else noted). The evidence is
// WaitWriterBlocked's, or the stdout pipe filled to within two pages (a
// quarter of a smaller pipe) with reads stalled: small writes fill pipes
// in fragments, which a writer blocks on before the pipe looks full by a
// page.
func (p *hostPlayer) blocked(ctx context.Context, k int) error {
	st := p.stalls[k]
	// What the recorded server had begun to write before the stall ended
	// (a frame's first byte read by then), past where the host stopped.
	var left int64
	for _, f := range p.rec.Server {
		if f.T0 <= st.Since+st.Dur && f.Off+f.Size+1 > st.At {
			left += f.Off + f.Size + 1 - max(f.Off, st.At)
		}
	}
	capacity := int64(p.s.StdoutState().Capacity)
	if capacity <= 0 {
		capacity = 64 << 10
	}
	if left < 2*capacity {
		p.note(fmt.Sprintf("stall seq %d not checked: the recorded server had begun %d bytes past stdout byte %d when the host resumed, which need not block it behind a %d-byte pipe", st.Seq, left, st.At, capacity))
		return nil
	}
	measured, err := p.waitBlocked(ctx, capacity)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p.extended > 0 {
		// The host had to read on to get what the recorded host had read
		// before it stopped: the server wrote other output first, and the
		// stall is not where it was.
		p.note(fmt.Sprintf("stall seq %d not checked: the host read %d bytes past the recorded point (stdout byte %d) for the messages the recorded host had before it stopped (the server wrote other output before them), so it did not stop where the recorded host did", st.Seq, p.extended, st.At))
		return nil
	}
	if !measured && runtime.GOOS != "linux" {
		p.note(fmt.Sprintf("stall seq %d not checked: %s shows neither pipe fill levels nor blocked threads", st.Seq, runtime.GOOS))
		return nil
	}
	v := p.s.StdoutState()
	var why string
	if !v.Stalled {
		why = fmt.Sprintf("the host would stop reading at stdout byte %d, where the recorded host did, but the server wrote only %d bytes", p.target, v.Read)
	} else {
		why = fmt.Sprintf("the host stopped reading at stdout byte %d, where the recorded host did; the server did not block writing stdout within %v", v.Read, p.pace.bound(0))
		if v.Buffered >= 0 {
			why += fmt.Sprintf(" (its stdout pipe holds %d of %d bytes)", v.Buffered, capacity)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.departLocked(Departure{
		Kind: StallNotBlocking, Seq: st.Seq, Dir: record.DirOut,
		Text: fmt.Sprintf("%s; the recorded server had begun %d bytes more by then", why, left),
	})
	return nil
}

// waitBlocked waits, at most the bound, for the server to block writing
// stdout: WaitWriterBlocked's evidence, or the pipe filled to within two
// pages of capacity with reads stalled. measured says a fill level was
// seen at all.
func (p *hostPlayer) waitBlocked(ctx context.Context, capacity int64) (measured bool, err error) {
	bctx, cancel := context.WithTimeout(ctx, p.pace.bound(0))
	defer cancel()
	found := make(chan error, 1)
	go func() { found <- p.s.WaitWriterBlocked(bctx) }()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case err := <-found:
			return measured, err
		case <-tick.C:
			if v := p.s.StdoutState(); v.Buffered >= 0 {
				measured = true
				if v.Stalled && v.Buffered > 0 && int64(v.Buffered) >= capacity-min(2*4096, capacity/4) {
					cancel()
					<-found
					return true, nil
				}
			}
		}
	}
}
