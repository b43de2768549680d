package proxy

import "time"

// batchEvery is how long the observer lets events gather while traffic
// flows before it takes them all: it then wakes once per batch rather than
// once per chunk, and keeps off the CPU that the forwarders and the two
// processes need on every round trip (a 2-core machine has no core to
// spare). Events carry the forwarders' timestamps, so no precision is
// lost; their copies wait in the pool meanwhile.
// A forwarder whose copies fill half its pool nudges the observer to come
// sooner, so that fast traffic loses no detail. It also bounds how long an
// event waits to be written to the record (a killed proxy loses at most
// that much): 2 ms against 10 ms took the median delay from event to
// record file from 9 ms to 2–4 ms on a loaded 2-core machine (load 20),
// with no change in the round trip or the throughput measurable there.
const batchEvery = 2 * time.Millisecond

// idleAfter: after this long without events, the observer sleeps until the
// next one instead of waking every batchEvery.
const idleAfter = 100 * time.Millisecond

// run is the observer's goroutine: it takes events from the three
// directions in batches, oldest first, and ticks to notice blocked writes,
// find verdicts and rewrite the status file.
func (o *observer) run() {
	defer close(o.done)
	defer func() {
		select {
		case <-o.abandon: // Wait went on without the observer: it closes its own ends
			for _, d := range o.dirs {
				if d.fw != nil {
					d.fw.sp.closeRead()
				}
			}
		default:
		}
	}()
	l := &obsLoop{tick: time.NewTicker(min(o.cfg.BlockEvent/2, 50*time.Millisecond)), batch: time.NewTimer(batchEvery), nextStatus: time.Now(), active: true, last: time.Now()}
	defer l.tick.Stop()
	defer l.batch.Stop()
	o.loop(l)
}

// obsLoop is the state of the observer's loop.
type obsLoop struct {
	tick       *time.Ticker
	batch      *time.Timer
	nextStatus time.Time
	active     bool      // events flow: take them every batchEvery
	last       time.Time // when events were last taken
}

// loop runs the observer until it finishes.
func (o *observer) loop(l *obsLoop) {
	for {
		o.p.rec.flush() // what was taken, before waiting for more
		if l.active {
			// A due tick goes first: in a flood the batch timer and the
			// nudge are always ready too, and a select that picked among
			// them at random left the tick (the status, block events,
			// verdicts) waiting seconds under load, a drain at a time.
			select {
			case now := <-l.tick.C:
				o.tick(now, &l.nextStatus)
				continue
			default:
			}
			select {
			case now := <-l.batch.C:
				l.batch.Reset(batchEvery)
				if n, _ := o.drainUntil(time.Now().Add(drainSlice)); n > 0 {
					l.last = now
				} else if now.Sub(l.last) >= idleAfter {
					l.active = false
				}
			case <-o.nudge:
				o.drainUntil(time.Now().Add(drainSlice))
			case now := <-l.tick.C:
				o.tick(now, &l.nextStatus)
			case reply := <-o.finishReq:
				reply <- o.finish1()
				return
			case <-o.abandon:
				return
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
			o.drainUntil(time.Now().Add(drainSlice))
		case now := <-l.tick.C:
			o.tick(now, &l.nextStatus)
			continue
		case reply := <-o.finishReq:
			reply <- o.finish1()
			return
		case <-o.abandon:
			return
		}
		l.active, l.last = true, time.Now()
		l.batch.Reset(batchEvery)
	}
}
