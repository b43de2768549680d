package proxy

// How a forwarder hands the observer copies of what it read without ever
// waiting for it: a pool of chunk buffers, copies of small reads, and a
// channel it never blocks on.

import "bytes"

// copyBuf returns a buffer to share with the observer: a free one, or a
// new one while fewer than slots exist; nil when all are in use.
func (f *forwarder) copyBuf() []byte {
	select {
	case c := <-f.free:
		if len(f.free) < f.slots/2 && f.made == f.slots {
			f.nudge()
		}
		return c
	default:
	}
	if f.made < f.slots {
		f.made++
		if f.made > f.slots/2 && len(f.free) == 0 {
			f.nudge()
		}
		return make([]byte, f.p.cfg.ChunkSize)
	}
	f.nudge()
	return nil
}

// nudge asks the observer to take its events now: the pool of copies is
// running out.
func (f *forwarder) nudge() {
	select {
	case f.p.obs.nudge <- struct{}{}:
	default:
	}
}

// smallRead is the largest read whose bytes the observer gets as a copy
// of their own rather than in a pooled buffer: a host or server that
// writes a byte at a time would otherwise use up the pool with one chunk
// buffer per byte, and the observer would lose detail it has room for.
const smallRead = 4 << 10

// share gives the observer the bytes b of ev: the pooled buffer b was
// read into, or, when the pool runs low, a copy for a small read, and when
// it is out, a copy of any read (within ObserverBuffer bytes of such
// copies); else none (the detail is lost). It reports whether the pooled buffer is to go back to the pool
// once b is written.
func (f *forwarder) share(ev *obsEvent, b []byte, pooled bool) (giveBack bool) {
	n := int64(len(b))
	low := !pooled || (f.made == f.slots && len(f.free) < f.slots/2)
	// A read that found the pool empty is copied too, whatever its size,
	// while the budget allows: the alternative is to lose it.
	if low && (n <= smallRead || !pooled) && f.small.Load()+n <= int64(f.p.cfg.ObserverBuffer) {
		f.small.Add(n)
		ev.buf, ev.small = bytes.Clone(b), true
		return pooled
	}
	if pooled {
		ev.buf = b
		return false
	}
	f.lostBytes.Add(n)
	return false
}

// release returns ev's copy: to the pool, or to the budget of small copies.
func (f *forwarder) release(ev obsEvent) {
	if ev.small {
		f.small.Add(-int64(len(ev.buf)))
		return
	}
	f.free <- ev.buf[:cap(ev.buf)] // there are at most slots buffers, so there is room
}

// send gives ev to the observer if its channel has room, and asks the
// observer to come sooner once the channel is half full.
func (f *forwarder) send(ev obsEvent) {
	select {
	case f.obs <- ev:
		if len(f.obs) > cap(f.obs)/2 {
			f.nudge()
		}
	default:
		f.lostEvents.Add(1)
		if ev.buf != nil {
			f.lostBytes.Add(int64(ev.n))
			f.release(ev)
		}
	}
}
