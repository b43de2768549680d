package proxy

import "time"

// A host or server that writes a few bytes at a time makes one read, and
// two observer events, per write. While the observer keeps up, each goes
// through its channel; once the channel is half full, the forwarder merges
// the small reads that follow into one batch (their bytes copied, within
// ObserverBuffer), which the observer takes when it comes: the bytes and
// frames are all seen, and the chunk event says how many reads it stands
// for (record.Event.Reads). A larger read first sends the batch on, so the
// order of events is kept.

// obsBatch is small reads and their writes, merged.
type obsBatch struct {
	off   int64     // source offset of the first byte
	buf   []byte    // the bytes
	t0    time.Time // the first read returned
	t     time.Time // the last write returned
	reads int
}

// events are the batch as a read and a written event.
func (b *obsBatch) events() [2]obsEvent {
	return [2]obsEvent{
		{kind: obsRead, off: b.off, n: len(b.buf), t: b.t0, buf: b.buf, small: true, reads: b.reads},
		{kind: obsWritten, off: b.off, n: len(b.buf), t: b.t, since: b.t0, reads: b.reads},
	}
}

// merging reports whether a read of n bytes goes into the batch: it is
// small, copies of it fit, and a batch has begun or the channel is half
// full.
func (f *forwarder) merging(n int) bool {
	if n > smallRead || f.small.Load()+int64(n) > int64(f.p.cfg.ObserverBuffer) {
		return false
	}
	return f.hasBatch.Load() || len(f.obs) > cap(f.obs)/2
}

// addBatch adds bytes b, read at t0 and written by t, to the batch.
func (f *forwarder) addBatch(off int64, b []byte, t0, t time.Time) {
	f.small.Add(int64(len(b)))
	f.batchMu.Lock()
	if f.batch == nil {
		f.batch = &obsBatch{off: off, t0: t0}
		f.hasBatch.Store(true)
		f.nudge()
	}
	f.batch.buf = append(f.batch.buf, b...)
	f.batch.t = t
	f.batch.reads++
	f.batchMu.Unlock()
}

// flushBatch sends the batch through the channel, before an event that
// does not go into it.
func (f *forwarder) flushBatch() {
	if !f.hasBatch.Load() {
		return
	}
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	if f.batch == nil {
		return
	}
	for _, ev := range f.batch.events() {
		f.send(ev)
	}
	f.batch = nil
	f.hasBatch.Store(false)
}

// takeBatch gives the observer the batch, nil if there is none; it calls
// it only when the channel is empty or closed, so the batch comes after
// every event sent before it.
func (f *forwarder) takeBatch() *obsBatch {
	if !f.hasBatch.Load() {
		return nil
	}
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	b := f.batch
	f.batch = nil
	f.hasBatch.Store(false)
	return b
}
