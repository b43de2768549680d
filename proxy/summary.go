package proxy

// The observer's ticks and its end: block events, verdicts as they
// appear, the status hook, and the summary.

import (
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// tick notices writes that block, records new verdicts and reports the
// status when it is due. Behind a flood it cannot keep up with (its drain
// did not catch up within drainSlice), it records nothing found now, which
// would come before older events still waiting, and reports the status as
// of the oldest of them: what it has seen, no later.
func (o *observer) tick(now time.Time, nextStatus *time.Time) {
	// What happened before now goes into the record before what is found
	// now.
	if _, upTo := o.drainUntil(time.Now().Add(drainSlice)); !upTo.IsZero() {
		if o.cfg.OnStatus != nil && !now.Before(*nextStatus) {
			*nextStatus = time.Now().Add(o.cfg.StatusInterval)
			o.reportStatus(upTo.Add(-time.Nanosecond))
		}
		return
	}
	o.mu.Lock()
	for _, d := range o.dirs {
		o.noteDrops(d, now)
		ws := d.fw.writeStart.Load()
		if ws == 0 || ws == d.blockSeen {
			continue
		}
		since := o.start.Add(time.Duration(ws - 1))
		if now.Sub(since) >= o.cfg.BlockEvent {
			d.blockSeen = ws
			o.emit(now, record.Event{Ev: record.EvBlock, Dir: dirNames[d.d], Since: o.since(since), N: d.fw.writeLen.Load(), Text: "writing " + dstNames[d.d] + " is blocked"})
		}
	}
	for _, v := range o.liveVerdicts(now) {
		o.recordVerdict(now, v)
	}
	o.tickEvent(now)
	due := o.cfg.OnStatus != nil && !now.Before(*nextStatus)
	o.mu.Unlock()
	if due {
		now = time.Now() // the tick's time is as old as the drain took
		*nextStatus = now.Add(o.cfg.StatusInterval)
		o.reportStatus(now)
	}
}

// tickIdle is how long the record of a proxy with nothing waiting may be
// quiet before a tick event (record.EvTick) says it still runs.
const tickIdle = time.Minute

// tickEvent writes a tick event with the metrics so far when nothing has
// been written for StatusInterval while a request is pending, a write is
// blocked or a fault holds a direction, or for tickIdle. o.mu is held.
func (o *observer) tickEvent(now time.Time) {
	last, ok := o.p.rec.lastEvent()
	if !ok || now.Sub(last) < o.cfg.StatusInterval {
		return
	}
	busy := len(o.pending) > 0
	for _, d := range o.dirs {
		busy = busy || d.fw.writeStart.Load() != 0 || d.fw.stopped.Load() != 0
	}
	if !busy && now.Sub(last) < tickIdle {
		return
	}
	m := o.metrics()
	o.emit(now, record.Event{Ev: record.EvTick, Metrics: &m})
}

// recordVerdict writes a verdict the first time it appears.
func (o *observer) recordVerdict(now time.Time, v record.Verdict) {
	k := v.Kind + " " + string(v.ID)
	if o.seen[k] {
		return
	}
	o.seen[k] = true
	o.emit(now, record.Event{Ev: record.EvVerdict, Verdict: &v})
}

// keepVerdict remembers a verdict about something that has ended, for the
// summary; the newest of a kind and id replaces an older one.
func (o *observer) keepVerdict(v record.Verdict) {
	for i := range o.verdicts {
		if o.verdicts[i].Kind == v.Kind && string(o.verdicts[i].ID) == string(v.ID) {
			o.verdicts[i] = v
			return
		}
	}
	if len(o.verdicts) < 64 {
		o.verdicts = append(o.verdicts, v)
	}
}

func (o *observer) noteExit(t time.Time, info ExitInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.exit, o.exitAt = &info, t
	o.m.Terminations++
}

// recordGrace is how long, beyond ExitGrace, finish waits for an
// observer that is stuck: in a Write of the record or in OnStatus that
// does not return (a hung file system).
const recordGrace = 2 * time.Second

// finish is called by Wait once the forwarders that will end have ended:
// the observer drains what is left, writes the summary and stops. The
// proxy must end: a backlog (a flood of short lines behind a record that
// is slow to write) gets ExitGrace, and what is left then is counted as
// lost detail; an observer that does not answer within ExitGrace plus
// recordGrace is left behind (abandon), and finish returns an error.
func (o *observer) finish() (*Result, error) {
	o.cutoff.Store(time.Now().Add(o.cfg.ExitGrace).UnixNano())
	reply := make(chan *Result, 1)
	limit := o.cfg.ExitGrace + recordGrace
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case o.finishReq <- reply:
		select {
		case r := <-reply:
			return r, nil
		case <-t.C:
		}
	case <-t.C:
	}
	close(o.abandon)
	return nil, fmt.Errorf("proxy: the record's writer or the status hook has not returned for %v: the proxy ends without the record's summary", limit)
}

func (o *observer) finish1() *Result {
	o.drain() // what the ended forwarders left, and the last noted events
	now := time.Now()
	o.mu.Lock()
	for _, d := range o.dirs {
		o.noteDrops(d, now)
		if d.fw != nil && !d.eofCh {
			// Wait went on without this forwarder (see watch): the bytes it
			// wrote on whose chunk events were not taken get a gap chunk
			// event here, their writes having returned by now unless one
			// failed.
			o.chunkGap(d, d.fw.written.Load(), now, d.fw.writesReturned(now))
		}
		if d.fw != nil {
			if lost := d.fw.read.Load() - d.expect; lost > 0 {
				// The stream's end passed unseen (events skipped or
				// dropped, or spliced past a full pipe): a gap frame
				// stands for it, whether or not it ended in a newline.
				d.fa.lost(lost)
				d.expect += lost
				o.frameDone(d, d.fa, now, false)
				d.fa.active = false
			}
		}
		if d.fa.active {
			o.frameDone(d, d.fa, now, true)
			d.fa.active = false
		}
	}
	o.ended = true
	vs := o.finalVerdicts(now)
	m := o.metrics()
	for _, v := range vs {
		o.recordVerdict(now, v)
	}
	o.emit(now, record.Event{Ev: record.EvSummary, Verdicts: vs, Metrics: &m})
	o.mu.Unlock()
	o.p.rec.flush()
	return &Result{Status: o.status(now), Verdicts: vs}
}

// skip drops an event the observer has no time left for (see finish),
// counting it as its direction's lost detail: finish1 records the drop and
// a gap frame for the bytes.
func (o *observer) skip(d *dirObs, ev obsEvent) {
	d.fw.lostEvents.Add(1)
	if ev.kind == obsRead {
		d.fw.lostBytes.Add(int64(ev.n))
		if ev.buf != nil && !ev.tee {
			d.fw.release(ev)
		}
	}
}

// metrics returns the metrics with the byte counts of the forwarders,
// which see every byte, and the time stop faults held each source.
func (o *observer) metrics() record.Metrics {
	m := o.m
	m.StdinBytes = o.dirs[dIn].fw.read.Load()
	m.StdoutBytes = o.dirs[dOut].fw.read.Load()
	m.StderrBytes = o.dirs[dErr].fw.read.Load()
	m.HeldInUS, m.HeldOutUS, m.HeldErrUS = o.held(dIn).Microseconds(), o.held(dOut).Microseconds(), o.held(dErr).Microseconds()
	return m
}

// held is how long stop faults have held direction d's source so far.
func (o *observer) held(d dirIndex) time.Duration {
	fw := o.dirs[d].fw
	ns := fw.held.Load()
	if since := fw.stopped.Load(); since != 0 {
		ns += time.Now().UnixNano() - since
	}
	return time.Duration(ns)
}
