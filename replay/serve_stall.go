package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
)

// gate passes the host's stdin to the played server's framer up to a
// limit, and then reads no more until the limit is raised: the played
// server stops reading where the recorded one did, and the host under
// test meets a full pipe, as the recorded host did.
type gate struct {
	r       io.Reader
	onStall func() // called (without the lock) when a read waits at the limit

	mu      sync.Mutex
	cond    *sync.Cond
	limit   int64 // -1: open
	passed  int64 // bytes read through the gate
	stalled bool  // a read waits at the limit
	closed  bool
}

func newGate(r io.Reader, onStall func()) *gate {
	g := &gate{r: r, onStall: onStall, limit: -1}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gate) Read(p []byte) (int, error) {
	g.mu.Lock()
	for g.limit >= 0 && g.passed >= g.limit && !g.closed {
		if !g.stalled {
			g.stalled = true
			g.mu.Unlock()
			g.onStall()
			g.mu.Lock()
			continue
		}
		g.cond.Wait()
	}
	g.stalled = false
	if g.closed {
		g.mu.Unlock()
		return 0, os.ErrClosed
	}
	n := len(p)
	if g.limit >= 0 {
		n = int(min(int64(n), g.limit-g.passed))
	}
	g.mu.Unlock()
	n, err := g.r.Read(p[:n])
	g.mu.Lock()
	g.passed += int64(n)
	g.mu.Unlock()
	return n, err
}

// set stops reads at stream byte limit (-1: never; at once if they are
// past it).
func (g *gate) set(limit int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit = limit
	g.cond.Broadcast()
}

// extend lets n more bytes through a stopped gate.
func (g *gate) extend(n int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.limit >= 0 {
		g.limit = max(g.limit, g.passed) + n
		g.cond.Broadcast()
	}
}

// state returns the bytes read through the gate and whether a read
// waits at its limit.
func (g *gate) state() (passed int64, stalled bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.passed, g.stalled
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.cond.Broadcast()
}

// stdinPipe returns the pipe of the host's stdin, to measure its fill
// level, or nil and why not.
func stdinPipe(stdin io.Reader) (*pipes.Pipe, string) {
	var f *os.File
	switch v := stdin.(type) {
	case *os.File:
		f = v
	case interface{ File() *os.File }:
		f = v.File()
	}
	if f == nil {
		return nil, fmt.Sprintf("the host's stdin is a %T, not a file whose pipe fill level can be read", stdin)
	}
	return &pipes.Pipe{R: f}, ""
}

// serveArm stops the played server's reads where the recorded server
// stopped for the next stall, if there is one; s.mu held.
func (s *server) serveArm() {
	if s.stall >= len(s.stalls) {
		s.gate.set(-1)
		return
	}
	s.armed, s.extended = true, 0
	s.gate.set(s.stallTarget())
}

// stallTarget returns the stdin byte where the played server stops for
// the current stall: the recorded point, moved as far as the end of the
// host's last message before it is (shift); s.mu held.
func (s *server) stallTarget() int64 {
	sh := shift{at: s.stalls[s.stall].At, best: -1}
	for i, end := range s.ends {
		sh.add(frameEnd(&s.rec.Host[i]), end)
	}
	return sh.at + sh.by
}

// retarget keeps an armed stall at its point as the host's messages come
// (their sizes move it); s.mu held.
func (s *server) retarget() {
	if !s.armed || s.extended > 0 {
		return
	}
	if passed, stalled := s.gate.state(); !stalled {
		s.gate.set(max(s.stallTarget(), passed))
	}
}

// letThrough lets 4 KiB more of stdin through a stopped gate when the
// player waits for host messages the recorded server had before its next
// action: the host wrote more before them than the recorded one; s.mu
// held.
func (s *server) letThrough() {
	if _, stalled := s.gate.state(); !s.armed || !stalled {
		return
	}
	const step = 4 << 10
	s.extended += step
	s.gate.extend(step)
}

// serveStall makes the played server's action at recorded time t, if
// the recorded server took it while it was not reading stdin (or it ends
// that stall), wait until the host under test has reached the state the
// recorded host had then: blocked writing stdin (its pipe full, with the
// played server's reads stopped), or it has written what the recorded
// host had by t. A host that does not get there within the bound is the
// StallNotBlocking departure, found before the action.
func (s *server) serveStall(ctx context.Context, t time.Duration, resume bool) error {
	s.mu.Lock()
	k := s.stall
	if !s.armed || k >= len(s.stalls) || s.checks[k].Outcome != "" {
		s.mu.Unlock()
		return nil
	}
	st := s.stalls[k]
	if t < st.Since || (st.Ended && t > st.Since+st.Dur) || (t == st.Since && !resume) {
		s.mu.Unlock()
		return nil
	}
	target, extended := s.stallTarget(), s.extended
	want := s.rec.wrote(record.DirIn, t) + target - st.At
	s.mu.Unlock()
	how, why, err := s.hostState(ctx, want)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &s.checks[k]
	switch {
	case how != "" && extended > 0:
		c.Outcome, c.MovedBy = StallMoved, target+extended-st.At
		c.Text = fmt.Sprintf("the played server read %d bytes past the recorded point for the messages the recorded server had; then %s", extended, how)
	case how != "":
		c.Outcome, c.Text = StallVerified, how
	case why != "":
		c.Outcome, c.Text = StallUnverifiable, why
	default:
		passed, _ := s.gate.state()
		c.Outcome = StallNotReached
		c.Text = fmt.Sprintf("the played server stopped reading stdin at byte %d, where the recorded server did; the host did not block writing within %v and had written %d bytes, where the recorded host had written %d by the recorded server's next action", passed, s.pace.bound(0), s.hostWritten(), want)
		s.depart(Departure{Kind: StallNotBlocking, Seq: st.Seq, Dir: record.DirIn, Text: c.Text})
	}
	return nil
}

// hostState waits, at most the bound, for the host to block writing
// stdin (its pipe filled to within two pages of capacity with the played
// server's reads stopped) or to have written want bytes. how says which
// was seen ("" for neither); why, when the fill level cannot be read.
func (s *server) hostState(ctx context.Context, want int64) (how, why string, err error) {
	if s.pipe == nil {
		return "", s.noPipe, nil
	}
	timer := time.NewTimer(s.pace.bound(0))
	defer timer.Stop()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		buffered, berr := s.pipe.Buffered()
		capacity := s.pipe.Capacity()
		switch {
		case berr != nil:
			return "", fmt.Sprintf("%s shows no fill level of the host's stdin pipe (%v)", runtime.GOOS, berr), nil
		case capacity <= 0:
			return "", "the host's stdin is not a pipe whose capacity can be read", nil
		}
		passed, stalled := s.gate.state()
		switch {
		case stalled && buffered >= capacity-min(2*4096, capacity/4):
			return fmt.Sprintf("the host blocked writing stdin: its pipe holds %d of %d bytes with the played server's reads stopped at byte %d", buffered, capacity, passed), "", nil
		case passed+int64(buffered) >= want:
			return fmt.Sprintf("the host had written %d bytes, as the recorded one had by then (%d read, %d in the pipe)", passed+int64(buffered), passed, buffered), "", nil
		}
		select {
		case <-tick.C:
		case <-timer.C:
			return "", "", nil
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
}

// hostWritten returns how many bytes of stdin the host has written: read
// through the gate, and waiting in the pipe.
func (s *server) hostWritten() int64 {
	passed, _ := s.gate.state()
	if s.pipe != nil {
		if b, err := s.pipe.Buffered(); err == nil {
			passed += int64(b)
		}
	}
	return passed
}

// serveResume ends the current stall: reads go on, up to the next
// stall's point.
func (s *server) serveResume(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	s.stall = k + 1
	s.serveArm()
	s.bumpLocked()
}

// endStalls checks a stall the record ended in (no action of the
// recorded server after its start), opens the gate and says why the
// stalls not checked were not; played says the actions all ran.
func (s *server) endStalls(ctx context.Context, played bool, end time.Duration) {
	if played {
		_ = s.serveStall(ctx, end, true)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armed = false
	s.stall = len(s.stalls)
	s.gate.set(-1)
	why := "no action of the record came while it held"
	if !played {
		why = "the replay stopped before it"
	}
	for k := range s.checks {
		if c := &s.checks[k]; c.Outcome == "" {
			c.Outcome, c.Text = StallSkipped, why
		}
	}
}
