package pipes

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// ErrValveClosed is returned by [Valve.Read] after [Valve.Close].
var ErrValveClosed = errors.New("pipes: valve closed")

// deadliner is what Valve needs to interrupt a read blocked in the kernel.
// *os.File from os.Pipe implements it.
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// Valve is an io.Reader over r whose reading can be stopped: while it is
// stalled, no read(2) is issued on r, so the kernel pipe behind r fills up
// and its writer blocks, exactly as if the reading program were busy.
//
// One goroutine reads from a Valve; any goroutine may stall, resume and
// inspect it.
type Valve struct {
	r  io.Reader
	dl deadliner // nil when r cannot be interrupted

	mu          sync.Mutex
	cond        *sync.Cond
	stalled     bool
	stallCh     chan struct{} // closed while stalled
	since       time.Time     // when the current stall began
	allowance   int64         // bytes still allowed before stalling; <0 means unlimited
	inRead      bool          // a Read is inside r.Read
	deadlineSet bool          // Stall set a past read deadline that must be cleared
	closed      bool
	bytes       int64
	reads       int64
}

// NewValve returns a Valve reading from r, initially open.
//
// If r has a SetReadDeadline method (an *os.File from os.Pipe does), Stall
// interrupts a read already blocked in the kernel. Otherwise Stall cannot
// interrupt it: that one read may still complete and deliver its bytes after
// Stall returns.
func NewValve(r io.Reader) *Valve {
	v := &Valve{r: r, allowance: -1, stallCh: make(chan struct{})}
	v.cond = sync.NewCond(&v.mu)
	if d, ok := r.(deadliner); ok {
		v.dl = d
	}
	return v
}

// Read reads from the underlying reader unless the valve is stalled, in which
// case it waits until Resume or Close. After StallAfter(n), Read never returns
// more than the bytes still allowed. A read interrupted by Stall delivers the
// bytes it got (none are lost or duplicated) and otherwise waits for Resume.
func (v *Valve) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	v.mu.Lock()
	for {
		for v.stalled && !v.closed {
			v.cond.Wait()
		}
		if v.closed {
			v.mu.Unlock()
			return 0, ErrValveClosed
		}
		if v.deadlineSet {
			// A stall interrupted an earlier read; reads may block again.
			_ = v.dl.SetReadDeadline(time.Time{})
			v.deadlineSet = false
		}
		buf := p
		if v.allowance >= 0 && int64(len(buf)) > v.allowance {
			buf = buf[:v.allowance]
		}
		v.inRead = true
		v.reads++
		v.mu.Unlock()

		n, err := v.r.Read(buf)

		v.mu.Lock()
		v.inRead = false
		v.bytes += int64(n)
		if v.allowance >= 0 {
			v.allowance -= int64(n)
			if v.allowance == 0 {
				v.allowance = -1
				v.stall()
			}
		}
		v.cond.Broadcast()
		if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && v.deadlineSet {
			// Our own interruption, not the caller's deadline.
			err = nil
			if n == 0 {
				continue
			}
		}
		v.mu.Unlock()
		return n, err
	}
}

// stall marks the valve stalled; v.mu must be held.
func (v *Valve) stall() {
	if !v.stalled {
		v.stalled = true
		v.since = time.Now()
		close(v.stallCh)
	}
}

// open marks the valve not stalled; v.mu must be held.
func (v *Valve) open() {
	if v.stalled {
		v.stalled = false
		v.since = time.Time{}
		v.stallCh = make(chan struct{})
	}
	v.cond.Broadcast()
}

// WaitStalled returns nil once the valve is stalled, at once if it already
// is; after StallAfter(n) that is when the n bytes have been read. It returns
// ctx.Err() if ctx ends first.
func (v *Valve) WaitStalled(ctx context.Context) error {
	v.mu.Lock()
	ch := v.stallCh
	v.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stall stops reading. When it returns, no further byte will be taken from
// the underlying reader until Resume: a read blocked in the kernel has been
// interrupted (if the reader supports read deadlines) and has finished.
// Stalling a stalled valve changes nothing.
func (v *Valve) Stall() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.allowance = -1
	v.stall()
	v.waitIdle()
}

// waitIdle interrupts and waits out an in-flight read; v.mu must be held and
// the valve stalled.
func (v *Valve) waitIdle() {
	if !v.inRead || v.dl == nil {
		return
	}
	v.deadlineSet = true
	_ = v.dl.SetReadDeadline(time.Unix(1, 0))
	for v.inRead {
		v.cond.Wait()
	}
}

// StallAfter lets exactly n more bytes through, counted from when it returns,
// and then stalls. StallAfter(0) is Stall.
func (v *Valve) StallAfter(n int64) {
	if n < 0 {
		n = 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	// Stop any read already in flight first: it was sized before this call
	// and could take more than n bytes.
	v.allowance = -1
	v.stall()
	v.waitIdle()
	if n == 0 || v.closed {
		return
	}
	v.allowance = n
	v.open()
}

// Resume lets reading continue without limit.
func (v *Valve) Resume() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.allowance = -1
	v.open()
}

// Stalled reports whether the valve is stalled now.
func (v *Valve) Stalled() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.stalled
}

// StalledSince returns when the current stall began, or the zero time if the
// valve is not stalled.
func (v *Valve) StalledSince() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.since
}

// BytesRead returns the number of bytes delivered through the valve so far.
func (v *Valve) BytesRead() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.bytes
}

// Reads returns the number of reads issued on the underlying reader.
func (v *Valve) Reads() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reads
}

// Close makes a Read waiting on a stall, and every later Read, return
// ErrValveClosed. It does not close the underlying reader and does not
// interrupt a read blocked in it; close the reader for that. Close is safe to
// call more than once.
func (v *Valve) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	v.cond.Broadcast()
	return nil
}
