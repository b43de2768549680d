package proxy

import (
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// The forwarding goroutine hands a copy of each chunk to one observer
// goroutine through a buffered channel, without waiting: copies come from
// a pool of at most Config.ObserverBuffer bytes per direction (allocated
// only as the observer falls behind). When the pool or the channel is
// full, the observer loses detail, counts it, records a record.EvDrop event and
// a gap, and the traffic goes on at full speed.
//
// The observer follows lines in memory bounded by ParseLimit + HeadBytes
// whatever their length: each line is redacted and hashed as it streams,
// its head kept, and, if it is within ParseLimit, parsed with
// wire.ParseMessage; a longer line is scanned with wire.Scanner for its
// top-level id and method. From this it keeps a pending table (each
// request with when it was read, written to the server, when its response
// began and ended and was delivered, its progress and cancel) and the
// per-direction blocked writes, and finds verdicts (see record.Verdict) such as
// "host is not reading the server's output: the response to id 7
// (tools/call search), 2.3 MiB of it read from the server so far, is
// waiting for 4m12s".
//

// observer parses copies of the traffic off the forwarding path and keeps
// the pending table, the metrics and the record. It is one goroutine; the
// forwarders never wait for it. Its state is guarded by mu so that Status
// can read it at any time.
type observer struct {
	p     *Proxy
	cfg   Config
	start time.Time
	dirs  [3]*dirObs

	finishReq chan chan *Result
	done      chan struct{} // closed when the observer's goroutine returns
	abandon   chan struct{} // closed when Wait gives up on the observer (finish)
	cutoff    atomic.Int64  // UnixNano set by finish: past it, traffic events are counted as lost, not handled
	nudge     chan struct{} // a forwarder's pool is half used, or an event was noted
	notes     notes

	mu      sync.Mutex
	pending map[pkey]*request
	tokens  map[string]*request // progress token → request from the host
	seq     int64               // order of requests, for eviction
	// forgottenOpen counts the host's requests the pending table forgot
	// (MaxPending) with no response begun and no cancel read for them:
	// unanswered when forgotten; what became of them is not known.
	forgottenOpen int64
	recent        []*request // the last answered requests, newest last
	m             record.Metrics
	seen          map[string]bool  // verdicts already recorded
	verdicts      []record.Verdict // notable past events, kept for the summary
	hostSent      []string         // distinct methods the host sent, at most 16
	toolCall      bool             // the host sent tools/call
	lastHost      time.Time        // last frame from the host
	exit          *ExitInfo
	exitAt        time.Time
	stdinEOF      time.Time // the host closed the server's stdin
	ended         bool
	statusErr     bool // an OnStatus error was recorded
}

// dirObs is the observer's view of one direction.
type dirObs struct {
	d     dirIndex
	fw    *forwarder
	ch    chan obsEvent
	head  obsEvent
	has   bool
	eofCh bool      // ch is closed
	later *obsEvent // the written half of a batch, after head

	expect   int64 // offset of the next byte
	fa       *frameAsm
	chunk    obsEvent // the last read, awaiting its write
	hasChunk bool
	data     []byte // its redacted bytes (bodies)
	dataOK   bool
	awaiting []await
	wend     int64 // end of the last chunk event

	blockSeen int64 // writeStart of the write a block event was written for
	lastByte  time.Time
	lastWrite time.Time // when the last write of this direction returned
	frames    int64
	largest   int64
	blocked   time.Duration // total time of blocked writes
	longest   time.Duration
	longestAt time.Time
	longestN  int64
	eof       time.Time
	gapAt     time.Time // when the last frame only partly seen ended
}

// await is something that happens when a frame's last byte has been
// written on: the source offset past its newline.
type await struct {
	end  int64
	what uint8 // awWritten, awDelivered, awCancelFwd
	r    *request
}

const (
	awWritten = iota
	awDelivered
	awCancelFwd
)

// maxAwait bounds each direction's awaiting list.
const maxAwait = 1 << 14

// keepRecent is how many answered requests Status and the verdicts remember.
const keepRecent = 16

func newObserver(p *Proxy, pol *redactPolicy) *observer {
	o := &observer{
		p: p, cfg: p.cfg, start: p.start,
		finishReq: make(chan chan *Result),
		done:      make(chan struct{}),
		abandon:   make(chan struct{}),
		nudge:     make(chan struct{}, 1),
		pending:   map[pkey]*request{},
		tokens:    map[string]*request{},
		seen:      map[string]bool{},
	}
	for d := range o.dirs {
		o.dirs[d] = &dirObs{d: dirIndex(d), fa: newFrameAsm(p.cfg, pol)}
	}
	return o
}

func (o *observer) attach(f *forwarder) {
	o.dirs[f.d].fw = f
	o.dirs[f.d].ch = f.obs
}

func (o *observer) since(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(t.Sub(o.start).Microseconds(), 1)
}

func (o *observer) emit(t time.Time, e record.Event) {
	if e.T == 0 {
		e.T = o.since(t)
	}
	o.p.rec.emit(t, e)
}

// emitFrame emits frame event e by recorder.emitFrame.
func (o *observer) emitFrame(t time.Time, e record.Event) {
	if e.T == 0 {
		e.T = o.since(t)
	}
	o.p.rec.emitFrame(t, e)
}

// emitChunk emits chunk event e, by recorder.emitChunk when it has no
// bodies and nothing waited.
func (o *observer) emitChunk(t time.Time, e record.Event) {
	if e.Data != "" || e.B64 != nil || e.Waited != 0 {
		o.emit(t, e)
		return
	}
	if e.T == 0 {
		e.T = o.since(t)
	}
	o.p.rec.emitChunk(t, e)
}

// drain handles every event waiting in the three channels and the queue
// of noted events, oldest first, and returns how many it handled. The
// queue is taken first: what happened before its events is in the
// channels by then.
func (o *observer) drain() int {
	n, _ := o.drainUntil(time.Time{})
	return n
}

// drainSlice is the most time the observer's loop gives one drain before
// it looks at its ticks again: a flood it cannot keep up with always has
// an event waiting, and drained whole kept the status from being reported
// (and block events, verdicts and ticks from being recorded) until the
// flood ended.
const drainSlice = 50 * time.Millisecond

// drainUntil is drain, but it stops at deadline (zero: never), leaving
// what still waits for the next call. It returns how many events it
// handled and, if it stopped early, the time up to which every event has
// been handled (the time of the oldest event still waiting); zero if it
// caught up.
func (o *observer) drainUntil(deadline time.Time) (int, time.Time) {
	ns := o.takeNotes()
	n := 0
	for {
		for _, d := range o.dirs {
			o.fill(d)
		}
		var first *dirObs
		for _, d := range o.dirs {
			if d.has && (first == nil || d.head.t.Before(first.head.t)) {
				first = d
			}
		}
		if !deadline.IsZero() && n > 0 && (first != nil || len(ns) > 0) && time.Now().After(deadline) {
			upTo := time.Time{}
			if first != nil {
				upTo = first.head.t
			}
			if len(ns) > 0 {
				if upTo.IsZero() || ns[0].t.Before(upTo) {
					upTo = ns[0].t
				}
				o.notes.mu.Lock() // the notes not written go back, for the next drain
				o.notes.q = append(ns, o.notes.q...)
				o.notes.mu.Unlock()
			}
			return n, upTo
		}
		if len(ns) > 0 && (first == nil || !first.head.t.Before(ns[0].t)) {
			o.writeNote(ns[0])
			ns = ns[1:]
			n++
			continue
		}
		if first == nil {
			return n, time.Time{}
		}
		first.has = false
		if c := o.cutoff.Load(); c != 0 && time.Now().UnixNano() > c {
			o.skip(first, first.head)
		} else {
			o.handle(first, first.head)
		}
		n++
	}
}

// fill takes direction d's next event, if it has none: the second half
// of a batch, the channel's next, or, when the channel is empty or closed,
// the forwarder's batch.
func (o *observer) fill(d *dirObs) {
	if d.has || d.eofCh || d.fw == nil { // no forwarder: the server did not start
		return
	}
	if d.later != nil {
		d.head, d.has, d.later = *d.later, true, nil
		return
	}
	select {
	case ev, ok := <-d.ch:
		o.take(d, ev, ok)
	default:
		o.takeBatch(d)
	}
}

// takeBatch makes the forwarder's batch d's next events.
func (o *observer) takeBatch(d *dirObs) bool {
	b := d.fw.takeBatch()
	if b == nil {
		return false
	}
	evs := b.events()
	d.head, d.has, d.later = evs[0], true, &evs[1]
	return true
}

func (d *dirObs) chOrNil() chan obsEvent {
	if d.eofCh || d.has {
		return nil
	}
	return d.ch
}

func (o *observer) take(d *dirObs, ev obsEvent, ok bool) {
	if !ok {
		if o.takeBatch(d) {
			return // the close is seen again after the batch
		}
		d.eofCh = true
		o.dirEnded(d)
		return
	}
	d.head, d.has = ev, true
}

// dirEnded notes that direction d ended, after its last bytes: the
// forwarder has closed its channel. (The forwarder noted the end itself,
// and the closes that passed it on.)
func (o *observer) dirEnded(d *dirObs) {
	fw := d.fw
	fw.mu.Lock()
	srcErr, srcEnd := fw.srcErr, fw.srcEnd
	fw.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	// The forwarder's writes all returned before its source ended.
	o.chunkGap(d, fw.written.Load(), srcEnd, fw.writesReturned(srcEnd))
	if srcErr == nil || errors.Is(srcErr, errClosed) {
		return
	}
	d.eof = srcEnd
	if d.d == dIn && errors.Is(srcErr, io.EOF) {
		o.stdinEOF = srcEnd
	}
}

// handle processes one event of direction d.
func (o *observer) handle(d *dirObs, ev obsEvent) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.noteDrops(d, ev.t)
	switch ev.kind {
	case obsRead:
		if gap := ev.off - d.expect; gap > 0 {
			d.fa.lost(gap) // events were lost: bytes passed unseen
		}
		d.expect = ev.off + int64(ev.n)
		d.lastByte = ev.t
		d.chunk, d.hasChunk = ev, true
		d.fa.startChunk()
		if ev.tee {
			if ev.buf = d.fw.sp.take(ev.n); ev.buf == nil {
				d.fw.lostBytes.Add(int64(ev.n))
			}
		}
		if ev.buf == nil {
			d.fa.lost(int64(ev.n))
		} else if ev.tee {
			d.fa.feed(ev.buf, ev.t, func(a *frameAsm, t time.Time) { o.frameDone(d, a, t, false) })
		} else {
			d.fa.feed(ev.buf, ev.t, func(a *frameAsm, t time.Time) { o.frameDone(d, a, t, false) })
			d.fw.release(ev)
		}
		d.data, d.dataOK = d.fa.data, d.fa.dataOK
	case obsWritten:
		o.written(d, ev)
	}
}

// noteDrops records what the forwarder could not give the observer since
// the last look.
func (o *observer) noteDrops(d *dirObs, t time.Time) {
	ev, b := d.fw.lostEvents.Swap(0), d.fw.lostBytes.Swap(0)
	if ev == 0 && b == 0 {
		return
	}
	o.m.DroppedEvents += ev
	o.m.DroppedBytes += b
	o.emit(t, record.Event{Ev: record.EvDrop, Dir: dirNames[d.d], Bytes: b, Events: ev, Text: "the observer fell behind: detail lost, traffic forwarded in full"})
}

// written handles the end of a write: the chunk event, a block that ended,
// and the frames whose last byte it carried.
func (o *observer) written(d *dirObs, ev obsEvent) {
	o.chunkGap(d, ev.off, ev.since, ev.since) // written before this write began
	d.wend = ev.off + int64(ev.n)
	d.lastWrite = ev.t
	ce := record.Event{Ev: record.EvChunk, Dir: dirNames[d.d], Off: ev.off, N: int64(ev.n), T: o.since(ev.since), WT: o.since(ev.t)}
	if ev.reads > 1 {
		ce.Reads = ev.reads
	}
	if d.hasChunk && d.chunk.off == ev.off {
		ce.T = o.since(d.chunk.t)
		if d.chunk.waited > 1 {
			ce.Waited, ce.RT = int64(d.chunk.waited-1), o.since(d.chunk.issued)
		}
		if o.cfg.LogBodies && d.dataOK {
			setData(&ce, d.data)
		} else if o.cfg.LogBodies {
			ce.Gap = true
		}
	}
	d.hasChunk = false
	o.emitChunk(ev.t, ce)
	if dur := ev.t.Sub(ev.since); dur >= o.cfg.BlockEvent && ev.reads <= 1 { // a batch spans many writes
		d.blocked += dur
		addBlocked(&o.m, d.d, dur)
		if dur > d.longest {
			d.longest, d.longestAt, d.longestN = dur, ev.since, int64(ev.n)
		}
		o.emit(ev.t, record.Event{Ev: record.EvUnblock, Dir: dirNames[d.d], Since: o.since(ev.since), Dur: dur.Microseconds(), N: int64(ev.n)})
	}
	end := ev.off + int64(ev.n)
	i := 0
	for ; i < len(d.awaiting) && d.awaiting[i].end <= end; i++ {
		a := d.awaiting[i]
		switch a.what {
		case awWritten:
			a.r.written = ev.t
		case awCancelFwd:
			a.r.cancelFwd = ev.t
		case awDelivered:
			a.r.delivered = ev.t
			o.answered(a.r)
		}
	}
	d.awaiting = d.awaiting[i:]
}

// writesReturned returns t, by which the forwarder's writes so far had
// returned, or the zero time if one failed: which of its bytes got
// through is not known.
func (fw *forwarder) writesReturned(t time.Time) time.Time {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.dstErr != nil {
		return time.Time{}
	}
	return t
}

// chunkGap writes a chunk event marked Gap for bytes written on whose
// own chunk events were lost, so that chunk events cover every byte: at
// t, their write having returned by wt (zero if not known).
func (o *observer) chunkGap(d *dirObs, upto int64, t, wt time.Time) {
	if upto > d.wend {
		e := record.Event{Ev: record.EvChunk, Dir: dirNames[d.d], Off: d.wend, N: upto - d.wend, Gap: true}
		if !wt.IsZero() {
			e.WT = o.since(wt)
		}
		o.emitChunk(t, e)
		d.wend = upto
	}
}

func (o *observer) await(d *dirObs, end int64, what uint8, r *request) {
	if len(d.awaiting) >= maxAwait {
		o.m.DroppedEvents++
		return
	}
	d.awaiting = append(d.awaiting, await{end: end, what: what, r: r})
}
