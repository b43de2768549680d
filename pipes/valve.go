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

// interruptBound is the longest Stall and StallAfter wait for an interrupted
// read to end. A read on an *os.File with a past deadline ends within
// microseconds; the bound is for readers whose deadline does nothing (an
// *os.File switched to blocking mode by its Fd method accepts a deadline and
// stays blocked in read(2)).
const interruptBound = time.Second

// deadliner is what Valve needs to interrupt a read blocked in the kernel.
// *os.File from os.Pipe implements it.
type deadliner interface {
	SetReadDeadline(t time.Time) error
}

// Valve is an io.Reader over r whose reading can be stopped: while it is
// stalled, no read(2) is issued on r, so the kernel pipe behind r fills up
// and its writer blocks, exactly as if the reading program were busy.
//
// One goroutine reads from a Valve. Stall, StallAfter, Resume and Close may
// be called from any goroutines, in any interleaving with each other and
// with Read; none of them blocks for longer than about a second. Each call
// takes effect when it begins, in the order the calls reach the valve, and
// the latest one decides the state: a call still waiting when a later one
// begins returns without undoing the later call (see Stall and StallAfter
// for what each then guarantees).
//
// The Valve owns r's read deadline: it sets one to interrupt a read and
// clears it before the next, so a deadline the caller sets on r is lost.
type Valve struct {
	r  io.Reader
	dl deadliner // nil when r cannot be interrupted

	mu          sync.Mutex
	stalled     bool
	stallCh     chan struct{} // closed while stalled
	closedCh    chan struct{} // closed by Close
	since       time.Time     // when the current stall began
	allowance   int64         // bytes still allowed before stalling; <0 means unlimited
	holds       int           // StallAfter calls keeping new reads from starting
	inRead      bool          // a Read is inside r.Read
	deadlineSet bool          // a past read deadline is set on r and must be cleared
	closed      bool
	calls       uint64        // Stall, StallAfter and Resume calls begun
	opens       uint64        // times the valve was opened (Resume, StallAfter)
	wake        chan struct{} // closed at the next change of state; nil while nobody waits
	bytes       int64
	reads       int64
}

// NewValve returns a Valve reading from r, initially open.
//
// If r has a SetReadDeadline method (an *os.File from os.Pipe does), Stall
// interrupts a read already blocked in the kernel. Otherwise, or if setting
// the deadline fails, Stall cannot interrupt it: that one read may still
// complete and deliver its bytes after Stall returns.
func NewValve(r io.Reader) *Valve {
	v := &Valve{r: r, allowance: -1, stallCh: make(chan struct{}), closedCh: make(chan struct{})}
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
		for (v.stalled || v.holds > 0) && !v.closed {
			v.await(nil)
		}
		v.clearDeadline()
		if v.closed {
			v.mu.Unlock()
			return 0, ErrValveClosed
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
			// Below zero only if a read that StallAfter could not interrupt
			// took more than the new allowance.
			if v.allowance -= int64(n); v.allowance <= 0 {
				v.allowance = -1
				v.stall()
			}
		}
		v.changed()
		if err != nil && v.deadlineSet && errors.Is(err, os.ErrDeadlineExceeded) {
			// Our own interruption, not the caller's deadline.
			err = nil
			if n == 0 {
				continue
			}
		}
		if v.closed {
			v.clearDeadline()
		}
		v.mu.Unlock()
		return n, err
	}
}

// clearDeadline removes the deadline a stall set; v.mu must be held and no
// read in flight.
func (v *Valve) clearDeadline() {
	if v.deadlineSet {
		_ = v.dl.SetReadDeadline(time.Time{})
		v.deadlineSet = false
	}
}

// changed wakes everything waiting in await; v.mu must be held.
func (v *Valve) changed() {
	if v.wake != nil {
		close(v.wake)
		v.wake = nil
	}
}

// await releases v.mu until the next call to changed or until timeout fires
// (nil: never), and reports whether it was woken by a change.
func (v *Valve) await(timeout <-chan time.Time) bool {
	if v.wake == nil {
		v.wake = make(chan struct{})
	}
	wake := v.wake
	v.mu.Unlock()
	defer v.mu.Lock()
	select {
	case <-wake:
		return true
	case <-timeout:
		return false
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

// open marks the valve not stalled and wakes the reader; v.mu must be held.
func (v *Valve) open() {
	if v.stalled {
		v.stalled = false
		v.since = time.Time{}
		v.stallCh = make(chan struct{})
	}
	v.opens++
	v.changed()
}

// WaitStalled returns nil once the valve is stalled, at once if it already
// is; after StallAfter(n) that is when the n bytes have been read. It returns
// ErrValveClosed if the valve is closed before it stalls, and ctx.Err() if
// ctx ends first.
func (v *Valve) WaitStalled(ctx context.Context) error {
	v.mu.Lock()
	ch, stalled, closed := v.stallCh, v.stalled, v.closed
	v.mu.Unlock()
	switch {
	case stalled:
		return nil
	case closed:
		return ErrValveClosed
	}
	select {
	case <-ch:
		return nil
	case <-v.closedCh:
		return ErrValveClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Stall stops reading. When it returns, no further byte is taken from the
// underlying reader until a Resume or StallAfter that began after this Stall
// did: a read in flight has been interrupted (with a read deadline) and has
// ended, and the bytes it got were delivered. Stalling a stalled valve
// changes nothing, and Stalls racing each other each wait for the read.
//
// A Resume or StallAfter that begins while Stall waits for the read
// supersedes the stall: Stall then returns no later than that call opens
// the valve. Stall returns without waiting for the read in flight, which may
// then still deliver bytes, only if Close was called, if the reader cannot
// be interrupted (see NewValve), or if the read has not ended a second after
// being interrupted (the reader ignores its deadline, as an *os.File does
// once its Fd method has put it in blocking mode).
func (v *Valve) Stall() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.begin()
	v.stall()
	v.changed()
	opens := v.opens
	v.waitIdle(func() bool { return v.opens != opens })
}

// waitIdle interrupts the in-flight read, if any, and waits until it has
// ended, the valve is closed, superseded reports true, or interruptBound
// passes; v.mu must be held and no new read may start meanwhile.
func (v *Valve) waitIdle(superseded func() bool) {
	if !v.inRead || v.dl == nil {
		return
	}
	if !v.deadlineSet {
		if v.dl.SetReadDeadline(time.Unix(1, 0)) != nil {
			return // cannot interrupt it: do not wait for it either
		}
		v.deadlineSet = true
	}
	timer := time.NewTimer(interruptBound)
	defer timer.Stop()
	for v.inRead && !v.closed && !superseded() {
		if !v.await(timer.C) {
			return
		}
	}
}

// StallAfter lets exactly n more bytes through, counted from when it returns,
// and then stalls; StallAfter(0) is Stall. Like Stall, it first interrupts a
// read in flight and waits for it to end, because that read was sized before
// this call and could take more than n bytes.
//
// If any Stall, StallAfter or Resume begins while it waits, or Close is
// called, StallAfter returns at once without opening the valve: the later
// call decides. If the read in flight cannot be interrupted (see Stall), its
// bytes count against the n, so more than n bytes may pass in all.
func (v *Valve) StallAfter(n int64) {
	if n <= 0 {
		v.Stall()
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	me := v.begin()
	v.holds++ // no new read until the allowance is set
	v.changed()
	v.waitIdle(func() bool { return v.calls != me })
	v.holds--
	if v.closed || v.calls != me {
		v.changed() // the reader may be waiting for the hold to end
		return
	}
	v.allowance = n
	v.open()
}

// Resume lets reading continue without limit. It never waits.
func (v *Valve) Resume() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.begin()
	v.open()
}

// begin begins a Stall, StallAfter or Resume: the call supersedes every
// one before it, and whatever allowance a StallAfter set ends. It returns
// the call's number; v.mu must be held.
func (v *Valve) begin() uint64 {
	v.calls++
	v.allowance = -1
	return v.calls
}

// Stalled reports whether the valve is stalled now.
func (v *Valve) Stalled() bool { return locked(&v.mu, func() bool { return v.stalled }) }

// StalledSince returns when the current stall began, or the zero time if the
// valve is not stalled.
func (v *Valve) StalledSince() time.Time { return locked(&v.mu, func() time.Time { return v.since }) }

// BytesRead returns the number of bytes delivered through the valve so far.
func (v *Valve) BytesRead() int64 { return locked(&v.mu, func() int64 { return v.bytes }) }

// Reads returns the number of reads issued on the underlying reader.
func (v *Valve) Reads() int64 { return locked(&v.mu, func() int64 { return v.reads }) }

// locked returns what get reads with mu held: the accessors of Valve and
// Capture.
func locked[T any](mu *sync.Mutex, get func() T) T {
	mu.Lock()
	defer mu.Unlock()
	return get()
}

// Close makes a Read waiting on a stall, and every later Read, return
// ErrValveClosed; a Stall, StallAfter or WaitStalled waiting on the valve
// returns at once. It does not close the underlying reader and does not
// interrupt a read blocked in it; close the reader for that. The bytes of a
// read in flight are still delivered. Close leaves no read deadline set on
// the reader once that read has ended. It never waits and is safe to call
// more than once.
func (v *Valve) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	v.closed = true
	close(v.closedCh)
	if !v.inRead {
		v.clearDeadline()
	}
	v.changed()
	return nil
}
