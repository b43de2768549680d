package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

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
	nudge     chan struct{} // a forwarder's pool is half used

	mu        sync.Mutex
	pending   map[pkey]*request
	tokens    map[string]*request // progress token → request from the host
	seq       int64               // order of requests, for eviction
	recent    []*request          // the last answered requests, newest last
	m         record.Metrics
	seen      map[string]bool  // verdicts already recorded
	verdicts  []record.Verdict // notable past events, kept for the summary
	hostSent  []string         // distinct methods the host sent, at most 16
	toolCall  bool             // the host sent tools/call
	lastHost  time.Time        // last frame from the host
	exit      *ExitInfo
	exitAt    time.Time
	stdinEOF  time.Time // the host closed the server's stdin
	ended     bool
	statusErr bool // a status file error was recorded
}

// pkey identifies a request: the direction it travelled and its id.
type pkey struct {
	d  dirIndex
	id string // wire.Key of the id
}

// request is one entry of the pending table.
type request struct {
	d         dirIndex
	seq       int64
	id        json.RawMessage
	method    string
	tool      string
	token     string
	size      int64
	sent      time.Time // its first byte was read from the requester
	read      time.Time // its last byte was read
	written   time.Time // it was written whole to the other side
	respStart time.Time // its response's first byte was read
	respRead  time.Time // its response's last byte was read
	delivered time.Time // its response was written whole to the requester
	respSize  int64
	respKind  string
	progress  int

	cancelRead   time.Time // the cancel for it was read
	cancelFwd    time.Time // the cancel was written on
	cancelReason string
	afterCancel  int       // progress notifications that began after cancelFwd
	lastProgress time.Time // the last of them
	late         bool
}

// dirObs is the observer's view of one direction.
type dirObs struct {
	d     dirIndex
	fw    *forwarder
	ch    chan obsEvent
	head  obsEvent
	has   bool
	eofCh bool // ch is closed

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
	frames    int64
	largest   int64
	blocked   time.Duration // total time of blocked writes
	longest   time.Duration
	longestAt time.Time
	longestN  int64
	eof       time.Time
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
// find verdicts and rewrite the status file.
func (o *observer) run() {
	defer o.p.wg.Done()
	tick := time.NewTicker(min(o.cfg.BlockEvent/2, 50*time.Millisecond))
	defer tick.Stop()
	batch := time.NewTimer(batchEvery)
	defer batch.Stop()
	nextStatus := time.Now()
	active, last := true, time.Now()
	for {
		if active {
			select {
			case now := <-batch.C:
				if o.drain() > 0 {
					last = now
				} else if now.Sub(last) >= idleAfter {
					active = false
					continue
				}
				batch.Reset(batchEvery)
			case <-o.nudge:
				o.drain()
			case now := <-tick.C:
				o.tick(now, &nextStatus)
			case reply := <-o.finishReq:
				reply <- o.finish1()
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
		case now := <-tick.C:
			o.tick(now, &nextStatus)
			continue
		case reply := <-o.finishReq:
			reply <- o.finish1()
			return
		}
		active, last = true, time.Now()
		batch.Reset(batchEvery)
	}
}

// drain handles every event waiting in the three channels, oldest first
// among the directions, and returns how many it handled.
func (o *observer) drain() int {
	n := 0
	for {
		for _, d := range o.dirs {
			if !d.has && !d.eofCh {
				select {
				case ev, ok := <-d.ch:
					o.take(d, ev, ok)
				default:
				}
			}
		}
		var first *dirObs
		for _, d := range o.dirs {
			if d.has && (first == nil || d.head.t.Before(first.head.t)) {
				first = d
			}
		}
		if first == nil {
			return n
		}
		first.has = false
		o.handle(first, first.head)
		n++
	}
}

func (d *dirObs) chOrNil() chan obsEvent {
	if d.eofCh || d.has {
		return nil
	}
	return d.ch
}

func (o *observer) take(d *dirObs, ev obsEvent, ok bool) {
	if !ok {
		d.eofCh = true
		o.dirEnded(d)
		return
	}
	d.head, d.has = ev, true
}

// dirEnded records how direction d ended, after its last bytes: the
// forwarder has closed its channel, so its end is known.
func (o *observer) dirEnded(d *dirObs) {
	fw := d.fw
	fw.mu.Lock()
	srcErr, srcEnd, dstErr, dstErrAt, closedDst, closedSrc := fw.srcErr, fw.srcEnd, fw.dstErr, fw.dstErrAt, fw.closedDst, fw.closedSrc
	fw.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	dir := dirNames[d.d]
	o.chunkGap(d, fw.written.Load(), srcEnd)
	if dstErr != nil {
		ev := record.Event{Ev: record.EvClose, Dir: dir, Err: dstErr.Error(), Text: fmt.Sprintf("writing %s failed", dstNames[d.d])}
		if closedSrc {
			ev.Text += fmt.Sprintf("; closed %s to pass it back", srcNames[d.d])
		}
		o.emit(dstErrAt, ev)
	}
	if srcErr == nil || errors.Is(srcErr, errClosed) {
		return
	}
	d.eof = srcEnd
	ev := record.Event{Ev: record.EvEOF, Dir: dir, Text: srcNames[d.d] + " ended"}
	if !errors.Is(srcErr, io.EOF) {
		ev.Text, ev.Err = "reading "+srcNames[d.d]+" failed", srcErr.Error()
	}
	o.emit(srcEnd, ev)
	if d.d == dIn && errors.Is(srcErr, io.EOF) {
		o.stdinEOF = srcEnd
	}
	if closedDst {
		o.emit(srcEnd, record.Event{Ev: record.EvClose, Dir: dir, Text: "closed " + dstNames[d.d] + " to pass the end on"})
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
		if ev.buf == nil {
			d.fa.lost(int64(ev.n))
		} else {
			d.fa.feed(ev.buf, ev.t, func(a *frameAsm, t time.Time) { o.frameDone(d, a, t, false) })
			d.fw.free <- ev.buf[:cap(ev.buf)]
		}
		d.data, d.dataOK = d.fa.data, d.fa.dataOK
	case obsWritten:
		o.written(d, ev)
	}
}

// metrics returns the metrics with the byte counts of the forwarders,
// which see every byte.
func (o *observer) metrics() record.Metrics {
	m := o.m
	m.StdinBytes = o.dirs[dIn].fw.read.Load()
	m.StdoutBytes = o.dirs[dOut].fw.read.Load()
	m.StderrBytes = o.dirs[dErr].fw.read.Load()
	return m
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
	o.chunkGap(d, ev.off, ev.since)
	d.wend = ev.off + int64(ev.n)
	ce := record.Event{Ev: record.EvChunk, Dir: dirNames[d.d], Off: ev.off, N: int64(ev.n), T: o.since(ev.since), WT: o.since(ev.t)}
	if d.hasChunk && d.chunk.off == ev.off {
		ce.T = o.since(d.chunk.t)
		if o.cfg.LogBodies && d.dataOK {
			setData(&ce, d.data)
		} else if o.cfg.LogBodies {
			ce.Gap = true
		}
	}
	d.hasChunk = false
	o.emit(ev.t, ce)
	if dur := ev.t.Sub(ev.since); dur >= o.cfg.BlockEvent {
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

// chunkGap writes a chunk event marked Gap for bytes written on whose
// own chunk events were lost, so that chunk events cover every byte.
func (o *observer) chunkGap(d *dirObs, upto int64, t time.Time) {
	if upto > d.wend {
		o.emit(t, record.Event{Ev: record.EvChunk, Dir: dirNames[d.d], Off: d.wend, N: upto - d.wend, Gap: true})
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

// frameDone takes a line that ended (or was cut off by the end of the
// stream) and updates the pending table.
func (o *observer) frameDone(d *dirObs, a *frameAsm, t time.Time, unterminated bool) {
	ev, m := a.frame(dirNames[d.d], unterminated)
	ev.T0, ev.T = o.since(a.t0), o.since(t)
	end := a.pos // past the newline
	d.frames++
	d.largest = max(d.largest, ev.N)
	switch d.d {
	case dIn:
		o.m.StdinFrames++
		o.m.LargestRequest = max(o.m.LargestRequest, ev.N)
		o.lastHost = t
	case dOut:
		o.m.StdoutFrames++
		o.m.LargestFrame = max(o.m.LargestFrame, ev.N)
	}
	if unterminated {
		o.m.Unterminated++
	}
	if ev.Kind == record.KindJunk && !ev.Gap {
		switch d.d {
		case dOut:
			o.m.ParseErrors++
			if o.m.FirstJunk == "" {
				o.m.FirstJunk = ev.Head
			}
		case dIn:
			o.m.HostParseErrors++
		}
	}
	o.emit(t, ev)
	if d.d == dErr || ev.Gap || unterminated {
		return // an unterminated line was never received whole
	}
	switch ev.Kind {
	case record.KindRequest:
		o.requestFrame(d, ev, a, end)
	case record.KindResponse, record.KindError:
		o.responseFrame(d, ev, a, t, end)
	case record.KindNotification:
		o.notificationFrame(d, ev, m, t, end)
	}
}

func (o *observer) requestFrame(d *dirObs, ev record.Event, a *frameAsm, end int64) {
	if d.d == dIn {
		o.m.Requests++
		o.noteHostMethod(ev.Method)
	} else {
		o.m.ServerRequests++
	}
	o.seq++
	r := &request{
		d: d.d, seq: o.seq, id: ev.ID, method: ev.Method, tool: ev.Tool, size: ev.N,
		sent: a.t0, read: o.timeOf(ev.T),
	}
	if r.sent.IsZero() {
		r.sent = r.read
	}
	k := pkey{d.d, wire.Key(ev.ID)}
	if old := o.pending[k]; old != nil {
		o.forget(old)
	}
	o.pending[k] = r
	if d.d == dIn && len(ev.Token) > 0 {
		r.token = wire.Key(ev.Token)
		if r.token != "" {
			o.tokens[r.token] = r
		}
	}
	o.await(d, end, awWritten, r)
	if len(o.pending) > o.cfg.MaxPending {
		var oldest *request
		for _, p := range o.pending {
			if oldest == nil || p.seq < oldest.seq {
				oldest = p
			}
		}
		o.forget(oldest)
		o.m.Forgotten++
	}
}

// timeOf turns record microseconds back into a time.
func (o *observer) timeOf(us int64) time.Time {
	return o.start.Add(time.Duration(us) * time.Microsecond)
}

func (o *observer) noteHostMethod(m string) {
	if m == wire.MethodToolsCall {
		o.toolCall = true
	}
	for _, s := range o.hostSent {
		if s == m {
			return
		}
	}
	if len(o.hostSent) < 16 {
		o.hostSent = append(o.hostSent, m)
	}
}

// forget removes r from the pending table.
func (o *observer) forget(r *request) {
	k := pkey{r.d, wire.Key(r.id)}
	if o.pending[k] == r {
		delete(o.pending, k)
	}
	if r.token != "" && o.tokens[r.token] == r {
		delete(o.tokens, r.token)
	}
}

func (o *observer) responseFrame(d *dirObs, ev record.Event, a *frameAsm, t time.Time, end int64) {
	reqDir := dIn
	if d.d == dIn {
		reqDir = dOut
	}
	if d.d == dOut {
		o.m.Responses++
	}
	r := o.pending[pkey{reqDir, wire.Key(ev.ID)}]
	if r == nil || !r.respStart.IsZero() {
		o.m.UnknownResponses++
		if o.m.FirstUnknown == nil {
			o.m.FirstUnknown = ev.ID
		}
		return
	}
	r.respStart, r.respRead, r.respSize, r.respKind = a.t0, t, ev.N, ev.Kind
	if r.respStart.IsZero() {
		r.respStart = t
	}
	if !r.cancelFwd.IsZero() && r.respStart.After(r.cancelFwd) {
		r.late = true
		o.m.LateResponses++
		o.emit(t, record.Event{Ev: record.EvLate, Dir: dirNames[d.d], ID: r.id, Method: r.method, Tool: r.tool, After: r.respStart.Sub(r.cancelFwd).Microseconds()})
	}
	o.await(d, end, awDelivered, r)
}

func (o *observer) notificationFrame(d *dirObs, ev record.Event, m *wire.Message, t time.Time, end int64) {
	if d.d == dOut {
		o.m.Notifications++
	} else {
		o.noteHostMethod(ev.Method)
	}
	if m == nil {
		return
	}
	switch ev.Method {
	case wire.MethodCancelled:
		o.m.Cancels++
		rid := wire.Member(m.Params, "requestId")
		r := o.pending[pkey{d.d, wire.Key(rid)}]
		ce := record.Event{Ev: record.EvCancel, Dir: dirNames[d.d], ID: cut(rid), State: "unknown"}
		if len(rid) == 0 {
			ce.ID = nil
		}
		ce.Reason = stringMember(m.Params, "reason")
		if len(ce.Reason) > 256 {
			ce.Reason = string(trimRune([]byte(ce.Reason[:256])))
		}
		if r != nil {
			ce.Method, ce.Tool, ce.State = r.method, r.tool, r.stage()
			if r.cancelRead.IsZero() {
				r.cancelRead, r.cancelReason = t, ce.Reason
				o.await(d, end, awCancelFwd, r)
			}
		}
		o.emit(t, ce)
	case wire.MethodProgress:
		if d.d != dOut || len(ev.Token) == 0 {
			return
		}
		r := o.tokens[wire.Key(ev.Token)]
		if r == nil {
			return
		}
		r.progress++
		if !r.cancelFwd.IsZero() && o.timeOf(ev.T0).After(r.cancelFwd) {
			r.afterCancel++
			r.lastProgress = t
		}
	}
}

// stage says where a pending request is: "unwritten" (not yet written
// whole to the other side), "waiting" (for its response), "responding"
// (its response is arriving) or "delivering" (its response was read whole
// and is being written to the requester).
func (r *request) stage() string {
	switch {
	case r.written.IsZero():
		return "unwritten"
	case r.respStart.IsZero():
		return "waiting"
	case r.respRead.IsZero():
		return "responding"
	}
	return "delivering"
}

// answered moves r out of the pending table once its response reached the
// requester.
func (o *observer) answered(r *request) {
	o.forget(r)
	if r.late || r.afterCancel > 0 {
		// Keep the evidence for the summary.
		v := cancelVerdict(o, r, time.Now())
		o.keepVerdict(v)
		o.recordVerdict(r.delivered, v)
	}
	o.recent = append(o.recent, r)
	if len(o.recent) > keepRecent {
		o.recent = o.recent[1:]
	}
}

// tick notices writes that block, records new verdicts and rewrites the
// status file when it is due.
func (o *observer) tick(now time.Time, nextStatus *time.Time) {
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
	due := o.cfg.StatusFile != "" && !now.Before(*nextStatus)
	o.mu.Unlock()
	if due {
		*nextStatus = now.Add(o.cfg.StatusInterval)
		o.writeStatus(now)
	}
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

// finish is called by Wait once the forwarders that will end have ended:
// the observer drains what is left, writes the summary and stops.
func (o *observer) finish() *Result {
	reply := make(chan *Result)
	o.finishReq <- reply
	return <-reply
}

func (o *observer) finish1() *Result {
	now := time.Now()
	// Drain what the ended forwarders left in their channels.
	for _, d := range o.dirs {
		for {
			if d.has {
				d.has = false
				o.handle(d, d.head)
			}
			if d.eofCh {
				break
			}
			select {
			case ev, ok := <-d.ch:
				o.take(d, ev, ok)
				continue
			default:
			}
			break
		}
	}
	o.mu.Lock()
	for _, d := range o.dirs {
		o.noteDrops(d, now)
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
	st := o.status(now)
	if o.cfg.StatusFile != "" {
		_ = os.Remove(o.cfg.StatusFile)
	}
	return &Result{Status: st, Verdicts: vs}
}
