package proxy

import (
	"encoding/json"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/wire"
)

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
	end       int64     // its source offset past its newline
	sent      time.Time // its first byte was read from the requester
	read      time.Time // its last byte was read
	written   time.Time // it was written whole to the other side
	respStart time.Time // its response's first byte was read
	respRead  time.Time // its response's last byte was read
	delivered time.Time // its response was written whole to the requester
	respOff   int64     // its response's source offset
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
	if ev.Gap {
		o.m.GapFrames++
		d.gapAt = t
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
	o.emitFrame(t, ev)
	if d.d == dErr || ev.Gap && ev.Kind == "" || unterminated {
		return // an unterminated line was never received whole; a gap, but for a response's middle, hides what it was
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
		d: d.d, seq: o.seq, id: ev.ID, method: ev.Method, tool: ev.Tool, size: ev.N, end: end,
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
		if oldest.d == dIn && oldest.respStart.IsZero() && oldest.cancelRead.IsZero() {
			o.forgottenOpen++
		}
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
		// Counted for the side that sent it.
		if d.d == dIn {
			o.m.HostUnknownResponses++
			if o.m.FirstHostUnknown == nil {
				o.m.FirstHostUnknown = ev.ID
			}
			return
		}
		o.m.UnknownResponses++
		if o.m.FirstUnknown == nil {
			o.m.FirstUnknown = ev.ID
		}
		return
	}
	r.respStart, r.respRead, r.respOff, r.respSize, r.respKind = a.t0, t, ev.Off, ev.N, ev.Kind
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
		var rid json.RawMessage // bounded as the requests' ids are (cut)
		if v := wire.Member(m.Params, "requestId"); len(v) > 0 {
			rid = cut(v)
		}
		r := o.pending[pkey{d.d, wire.Key(rid)}]
		ce := record.Event{Ev: record.EvCancel, Dir: dirNames[d.d], ID: rid, State: "unknown"}
		ce.Reason = stringMember(m.Params, "reason")
		if len(ce.Reason) > 256 {
			ce.Reason = string(trimRune([]byte(ce.Reason[:256])))
		}
		if r != nil {
			ce.Method, ce.Tool, ce.State = r.method, r.tool, o.stage(r)
			ce.N, ce.Bytes = o.responseBytes(r)
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
// (its response is being read: its first bytes came, its newline not yet;
// responseBytes says how much of it) or "delivering" (its response was
// read whole and is being written to the requester). It is "unseen" where
// the observer lost detail of the stream r's response comes on since r was
// written (lostSince), and no response is seen arriving: the response may
// have passed unseen, and "waiting" would claim what was not observed.
func (o *observer) stage(r *request) string {
	switch {
	case r.written.IsZero():
		return "unwritten"
	case !r.respRead.IsZero():
		return "delivering"
	case o.responseUnderway(r):
		return "responding"
	case o.lostSince(r):
		return "unseen"
	}
	return "waiting"
}

// responseBytes returns how much of r's response the observer has seen
// read from the responder (all of it once it was read whole, so far while
// it is being read) and how much of that was delivered: written to the
// requester, the write returned.
func (o *observer) responseBytes(r *request) (read, delivered int64) {
	d := o.respDir(r)
	var from int64
	switch {
	case !r.respRead.IsZero():
		read, from = r.respSize, r.respOff
	case o.responseUnderway(r):
		read, from = d.fa.size, d.fa.start
	default:
		return 0, 0
	}
	return read, min(max(d.fw.written.Load()-from, 0), read)
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
