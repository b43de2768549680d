package proxy

import "time"

// batchEvery is how long the observer lets events gather while traffic
// flows before it takes them all: it then wakes once per batch rather than
// once per chunk, and keeps off the CPU that the forwarders and the two
// processes need on every round trip (a 2-core machine has no core to
// spare). Events carry the forwarders' timestamps, so no precision is
// lost; their copies wait in the pool meanwhile.
// A forwarder whose copies fill half its pool nudges the observer to come
// sooner, so that fast traffic loses no detail.
const batchEvery = 10 * time.Millisecond

// idleAfter: after this long without events, the observer sleeps until the
// next one instead of waking every batchEvery.
const idleAfter = 100 * time.Millisecond

// run is the observer's goroutine: it takes events from the three
// directions in batches, oldest first, and ticks to notice blocked writes,
// find verdicts and rewrite the status file; while it is behind on bulk it
// does so on the low-priority thread (thread.go).
func (o *observer) run() {
	defer o.p.wg.Done()
	defer o.low.end()
	l := &obsLoop{tick: time.NewTicker(min(o.cfg.BlockEvent/2, 50*time.Millisecond)), batch: time.NewTimer(batchEvery), nextStatus: time.Now(), active: true, last: time.Now()}
	defer l.tick.Stop()
	defer l.batch.Stop()
	for {
		more := false
		if l.low {
			o.low.do(func() { more = o.loop(l) })
		} else {
			more = o.loop(l)
		}
		if !more {
			return
		}
		l.low = !l.low
	}
}

// obsLoop is the state of the observer's loop, which moves between
// threads.
type obsLoop struct {
	tick       *time.Ticker
	batch      *time.Timer
	nextStatus time.Time
	active     bool         // events flow: take them every batchEvery
	last       time.Time    // when events were last taken
	low        bool         // on the low-priority thread
	drainNext  bool         // the move was for a drain: do it first
	finish     chan *Result // the move was to finish there: Wait is waiting
}

// finishOn finishes the observer at the normal priority, so that Wait
// never waits for a thread the kernel holds back: on the low thread it
// moves first. It returns what loop does.
func (o *observer) finishOn(l *obsLoop, reply chan *Result) bool {
	if l.low {
		l.finish = reply
		return true
	}
	reply <- o.finish1()
	return false
}

// moveNow reports whether the loop should move to the other thread: to the
// low one when the observer is behind on a direction's bulk by three
// quarters of its pipe, back once it is behind by a quarter at most. The
// observer yields only to traffic that flows: while a write has been
// blocked for BlockEvent there is none to yield to, and what it has not
// read yet (the head of the stuck message) is what the verdict needs, so
// it moves back, or stays.
func (o *observer) moveNow(l *obsLoop) bool {
	if o.low == nil {
		return false
	}
	now := time.Now()
	behind, left, stuck := false, false, false
	for i, d := range o.dirs {
		if d.fw == nil {
			continue
		}
		q, c := d.fw.sp.behind()
		behind = behind || c > 0 && q >= int64(c/4*3)
		left = left || q > int64(c/4)
		b, _ := o.blockedWrite(dirIndex(i), now)
		stuck = stuck || b > 0 && b >= o.cfg.BlockEvent
	}
	if l.low {
		return !left || stuck
	}
	return behind && !stuck
}

// loop runs the observer until it finishes (false) or is to move to the
// other thread (true). The move is decided before a drain, so that the
// drain is done where it belongs.
func (o *observer) loop(l *obsLoop) bool {
	if l.finish != nil { // moved back to finish
		l.finish <- o.finish1()
		return false
	}
	if l.drainNext {
		l.drainNext = false
		if o.drain() > 0 {
			l.last = time.Now()
		}
	}
	for {
		o.p.rec.flush() // what was taken, before waiting for more
		if l.active {
			select {
			case now := <-l.batch.C:
				l.batch.Reset(batchEvery)
				if o.moveNow(l) {
					l.drainNext = true
					return true
				}
				if o.drain() > 0 {
					l.last = now
				} else if now.Sub(l.last) >= idleAfter {
					l.active = false
				}
			case <-o.nudge:
				if o.moveNow(l) {
					l.drainNext = true
					return true
				}
				o.drain()
			case now := <-l.tick.C:
				o.tick(now, &l.nextStatus)
			case reply := <-o.finishReq:
				return o.finishOn(l, reply)
			}
			if l.low && o.moveNow(l) {
				l.drainNext = true
				return true
			}
			continue
		}
		select {
		case ev, ok := <-o.dirs[dIn].chOrNil():
			o.take(o.dirs[dIn], ev, ok)
		case ev, ok := <-o.dirs[dOut].chOrNil():
			o.take(o.dirs[dOut], ev, ok)
		case ev, ok := <-o.dirs[dErr].chOrNil():
			o.take(o.dirs[dErr], ev, ok)
		case <-o.nudge:
			o.drain()
		case now := <-l.tick.C:
			o.tick(now, &l.nextStatus)
			if l.low && o.moveNow(l) {
				l.drainNext = true
				return true
			}
			continue
		case reply := <-o.finishReq:
			return o.finishOn(l, reply)
		}
		l.active, l.last = true, time.Now()
		l.batch.Reset(batchEvery)
	}
}
