package mcptest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Replay plays the host side of rec, a session recorded by mcpstdio proxy,
// against target, and reports where the server under test departs from
// the recorded server. It starts target on real pipes (with the recorded
// pipe capacity, on Linux) and does what the recorded host did, in the
// same order:
//
//   - it writes the host's bytes to stdin cut into the recorded chunks,
//     one write each (WriteStdin), requests, notifications and cancels
//     alike; a record without bodies is played frame by frame, and a
//     frame the record has only the head of is left out (Unchecked);
//   - it stops reading stdout where the recorded host did (StallReadsAfter,
//     at the byte the record's blocked write puts it, moved by how much
//     longer or shorter the server under test's earlier responses were),
//     checks that the server then blocks writing (WaitWriterBlocked, or its
//     pipe filled; if not: StallNotBlocking) when the recorded server had
//     begun at least twice the pipe's capacity past that byte, and resumes
//     when the recorded host did;
//   - it closes stdin when the recorded host did.
//
// Requests get the recorded ids (a fresh one where a recorded id was a
// string or was used before in the record), and each response is matched to its request by
// that id, so it is compared with the response to the same request in the
// record whatever the order; notifications, server requests and junk lines
// are matched by order, per method. Server requests are answered with the
// recorded host's answer, on the session's handler, so the recorded
// answers are not written from the record. Values the proxy redacted as it
// recorded are sent as "[redacted]" (the record has not the originals),
// and match anything the server sends back in their place.
//
// By default the replay is causal: each action comes as soon as the
// server has sent what the recorded host had received before it (waited
// for at most Patience plus twice the longest time one of them took in the
// record, from the host's action before it, and no more than twice the
// recorded gap before the action; longer while the server's output is
// still arriving, up to 8 times that; then reported Missing); replay.Timed adds the recorded gaps. Each message
// is compared as replay.Record.Compare says (Ignore, CmpOptions). After the
// last action Replay resumes reads, waits for the rest of the recorded
// output, reports what else came (Extra), and checks that the server
// exits after stdin closed if the recorded one did. ctx bounds it all.
//
// The error is for a replay that could not run to the end (an invalid
// option, a server that did not start, ctx ending; Report.Stopped says
// which, and the report holds what was found so far) or for what Close
// found (a server that had to be killed).
func Replay(ctx context.Context, target Target, rec *replay.Record, opts ...replay.Option) (*replay.Report, error) {
	rep, _, err := replayHost(ctx, target, time.Time{}, rec, opts)
	return rep, err
}

// ReplayHost is Replay for tests, with the record loaded from file (with
// opts, so that Redact applies) and the replay bounded by the test's
// deadline. It calls t.Fatal if the file cannot be loaded or the server
// cannot be started, t.Error for each departure from the record and for a
// replay that could not finish, and t.Log for what could not be checked
// (Unchecked). It returns the report.
func ReplayHost(t testing.TB, target Target, file string, opts ...replay.Option) *replay.Report {
	t.Helper()
	rec, err := replay.Load(file, opts...)
	if err != nil {
		t.Fatalf("mcptest.ReplayHost: %v", err)
	}
	ctx, cancel, dl := bound.Context(context.Background(), t)
	defer cancel()
	rep, started, err := replayHost(ctx, target, dl, rec, opts)
	if !started {
		t.Fatalf("mcptest.ReplayHost(%s, %s): %v", target, file, err)
	}
	for _, d := range rep.Departures {
		if d.Kind == replay.Unchecked {
			t.Logf("mcptest.ReplayHost(%s): %s", file, d)
		} else {
			t.Errorf("mcptest.ReplayHost(%s): %s", file, d)
		}
	}
	for _, n := range rep.Notes {
		t.Logf("mcptest.ReplayHost(%s): note: %s", file, n)
	}
	if err != nil {
		t.Errorf("mcptest.ReplayHost(%s, %s): %v", target, file, err)
	}
	return rep
}

// hostPlayer plays the host side of a record on a session.
type hostPlayer struct {
	s     *Session
	rec   *replay.Record
	opts  []replay.Option
	pace  replay.Pace
	start time.Time
	wake  chan struct{} // the server-request handler matched something

	// Used by the playing goroutine only.
	pend      map[int]*Pending // host request frame → its Pending
	checked   map[int]bool     // host request frames whose response was taken
	usedIDs   map[int64]bool
	nextID    int64
	respFor   map[int]int // host request frame → the recorded response (server frame), -1 none
	lines     map[int][]byte
	junkSeen  int64
	unkSeen   int64
	stalls    []replay.Stall // of stdout
	stall     int            // the next or current stall
	armed     bool           // StallReadsAfter was called for stalls[stall]
	target    int64          // stdout byte it stops at
	extended  int64          // bytes let through beyond it
	quiet     int            // consecutive looks at a stalled valve with nothing changing
	lastLook  pipes.FramerStats
	hostDrops map[int]bool // host frames left out (reported once)

	mu       sync.Mutex // with the server-request handler
	report   replay.Report
	resolved []bool           // server frames matched or given up on
	noteQ    map[string][]int // recorded notifications not yet matched, by method
	srqQ     map[string][]int // recorded server requests, by method
	answers  map[string]int   // recorded server request id → the recorded host's answer (host frame)
	junkQ    []int            // recorded junk lines
	unkQ     []int            // recorded responses to no request of the host
	gaps     []int            // server frames where the record lost detail
	latency  []time.Duration  // how long each server frame took in the record
	lastNote map[string]int   // the last recorded notification matched, by method
	lost     int              // messages that came where the record lost detail
}

// replayHost runs a replay; started says whether the server started.
func replayHost(ctx context.Context, target Target, deadline time.Time, rec *replay.Record, opts []replay.Option) (*replay.Report, bool, error) {
	pace, err := replay.PaceOf(opts...)
	if err != nil {
		return &replay.Report{Stopped: err}, false, err
	}
	p := &hostPlayer{
		rec: rec, opts: opts, pace: pace, wake: make(chan struct{}, 1),
		pend: map[int]*Pending{}, checked: map[int]bool{}, usedIDs: map[int64]bool{}, respFor: map[int]int{},
		lines: map[int][]byte{}, hostDrops: map[int]bool{},
		resolved: make([]bool, len(rec.Server)),
		noteQ:    map[string][]int{}, srqQ: map[string][]int{}, answers: map[string]int{}, lastNote: map[string]int{},
	}
	p.index()
	p.latencies()
	s, err := start(ctx, target, deadline, p.sessionOptions())
	if err != nil {
		return &replay.Report{Stopped: err}, false, err
	}
	p.s = s
	p.start = time.Now()
	err = p.play(ctx)
	p.finish(ctx, err == nil)
	if err == nil {
		err = ctx.Err() // finish was cut short
	}
	stopped := err
	if cerr := s.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	// What the server sent after the last recorded message (a response
	// to a cancelled request, say) was read before Close returned: match
	// it, so that it is reported Extra.
	p.poll()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lost > 0 {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("%d messages came where the record lost detail: not checked", p.lost))
	}
	if st := s.Stats(); st.NotificationsDropped > 0 {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("the host's bounds dropped %d notifications unseen (Limits)", st.NotificationsDropped))
	}
	p.report.Elapsed = time.Since(p.start)
	p.report.Stopped = stopped
	rep := p.report
	return &rep, true, err
}

// index sorts the record's server frames into what will match them, and
// pairs each host request with its recorded response.
func (p *hostPlayer) index() {
	r := p.rec
	respQ := map[string][]int{} // responses by id, in order
	for j, f := range r.Server {
		if f.Gap {
			// Nothing in particular is expected there.
			p.gaps = append(p.gaps, j)
			p.resolved[j] = true
			p.report.Departures = append(p.report.Departures, replay.Departure{
				Kind: replay.Unchecked, Seq: f.Seq, Dir: record.DirOut,
				Text: fmt.Sprintf("the proxy's observer lost detail here (%d bytes from stdout byte %d): what the server sent in them is not known, and what comes in their place is not checked", f.Size, f.Off),
			})
			continue
		}
		switch f.Kind {
		case record.KindResponse, record.KindError:
			respQ[wire.Key(f.ID)] = append(respQ[wire.Key(f.ID)], j)
		case record.KindNotification:
			p.noteQ[f.Method] = append(p.noteQ[f.Method], j)
		case record.KindRequest:
			p.srqQ[f.Method] = append(p.srqQ[f.Method], j)
		default:
			p.junkQ = append(p.junkQ, j)
		}
	}
	for i, f := range r.Host {
		if id, ok := (&wire.Message{ID: f.ID}).IntID(); ok {
			p.nextID = max(p.nextID, id)
		}
		switch f.Kind {
		case record.KindRequest:
			k := wire.Key(f.ID)
			p.respFor[i] = -1
			if q := respQ[k]; len(q) > 0 {
				p.respFor[i], respQ[k] = q[0], q[1:]
			}
		case record.KindResponse, record.KindError:
			p.answers[wire.Key(f.ID)] = i
		}
	}
	for _, q := range respQ {
		p.unkQ = append(p.unkQ, q...) // answers to requests the host never sent
	}
	for _, st := range r.Stalls {
		if st.Dir == record.DirOut {
			p.stalls = append(p.stalls, st)
		}
	}
}

// sessionOptions returns the session's options for the record: no
// handshake (the record has its own), the recorded answers to server
// requests, bounds that keep what the record holds, the recorded pipes.
func (p *hostPlayer) sessionOptions() []Option {
	r := p.rec
	var notes int
	var noteBytes, longestNote, longest int64
	for _, f := range r.Server {
		longest = max(longest, f.Size)
		if f.Gap {
			// Any number of notifications, of at least 32 bytes each.
			notes += int(f.Size / 32)
			noteBytes += f.Size
		}
		if f.Kind == record.KindNotification {
			notes++
			noteBytes += f.Size
			longestNote = max(longestNote, f.Size)
		}
	}
	var stdinStall time.Duration
	for _, st := range r.Stalls {
		if st.Dir == record.DirIn {
			stdinStall = max(stdinStall, st.Dur)
		}
	}
	opts := []Option{
		WithoutHandshake(),
		WithServerRequests(p.serverRequest),
		WithMaxFrame(max(defaultMaxFrame, int(2*longest))),
		WithTimeout(max(defaultTimeout, 2*stdinStall+p.pace.Patience)),
		Limits{
			Notifications:     max(defaultNotifications, notes+defaultNotifications),
			NotificationBytes: max(defaultNotificationBytes, 2*noteBytes),
			NotificationHead:  int(max(defaultNotificationHead, longestNote+1)),
		},
	}
	if c := r.Header.Pipes.ServerStdout; c > 0 && runtime.GOOS == "linux" {
		opts = append(opts, WithPipeCapacity(c))
	}
	return opts
}

// action is one thing the recorded host did.
type hostAction struct {
	t      time.Duration
	chunk  *replay.Chunk // write a chunk of stdin
	frame  int           // or a frame (a record without bodies); -1 none
	block  int           // or: a stall began (index in stalls); -1 none
	resume int           // or: it ended
	eof    bool          // or: close stdin
}

func (p *hostPlayer) actions() []hostAction {
	var as []hostAction
	bodies := false
	for i := range p.rec.Chunks {
		if c := &p.rec.Chunks[i]; c.Dir == record.DirIn && c.Parts != nil {
			bodies = true
		}
	}
	if bodies {
		for i := range p.rec.Chunks {
			if c := &p.rec.Chunks[i]; c.Dir == record.DirIn {
				as = append(as, hostAction{t: c.T, chunk: c, frame: -1, block: -1, resume: -1})
			}
		}
	} else {
		for i, f := range p.rec.Host {
			as = append(as, hostAction{t: f.T0, frame: i, block: -1, resume: -1})
		}
	}
	for k, st := range p.stalls {
		as = append(as, hostAction{t: st.Since, frame: -1, block: k, resume: -1})
		if st.Ended {
			as = append(as, hostAction{t: st.Since + st.Dur, frame: -1, block: -1, resume: k})
		}
	}
	if p.rec.HostEOF >= 0 {
		as = append(as, hostAction{t: p.rec.HostEOF, frame: -1, block: -1, resume: -1, eof: true})
	}
	sortActions(as)
	return as
}

func sortActions(as []hostAction) {
	// Insertion order breaks ties: writes, then stalls, then the end.
	for i := 1; i < len(as); i++ {
		for j := i; j > 0 && as[j].t < as[j-1].t; j-- {
			as[j], as[j-1] = as[j-1], as[j]
		}
	}
}

// play does the recorded host's actions.
func (p *hostPlayer) play(ctx context.Context) error {
	p.arm()
	var prevT time.Duration
	var due time.Time
	for _, a := range p.actions() {
		// In timed mode the recorded gap counts from the previous action
		// (or from now, if that ran late): the wait for what the action
		// depends on is part of it, as it was in the record.
		gap := p.pace.Gap(a.t - prevT)
		if gap > 0 {
			if now := time.Now(); due.Before(now) {
				due = now
			}
			due = due.Add(gap)
		}
		if err := p.waitDeps(ctx, a.t, a.t-prevT); err != nil {
			return err
		}
		if gap > 0 {
			if err := bound.Pass(ctx, time.Until(due)); err != nil { // timed mode's gaps are the point
				return err
			}
		}
		prevT = a.t
		switch {
		case a.chunk != nil:
			b, _ := p.rec.ChunkBytes(a.chunk, p.line)
			for _, part := range a.chunk.Parts {
				if part.Frame >= 0 && p.rec.Host[part.Frame].Body == nil {
					p.leftOut(part.Frame)
				}
			}
			if err := p.write(ctx, a.chunk.Seq, b); err != nil {
				return err
			}
		case a.frame >= 0:
			if p.rec.Host[a.frame].Body == nil {
				p.leftOut(a.frame)
				continue
			}
			if err := p.write(ctx, p.rec.Host[a.frame].Seq, p.line(a.frame, &p.rec.Host[a.frame])); err != nil {
				return err
			}
		case a.block >= 0:
			if err := p.blocked(ctx, a.block); err != nil {
				return err
			}
		case a.resume >= 0:
			p.s.ResumeReads()
			p.armed = false
			p.stall = a.resume + 1
			p.arm()
		case a.eof:
			if err := p.s.CloseStdin(); err != nil && !errors.Is(err, ErrClosed) {
				return err
			}
		}
	}
	return nil
}

// write writes one chunk of the host's bytes.
func (p *hostPlayer) write(ctx context.Context, seq int64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := p.s.WriteStdin(ctx, b)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.report.Played++
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	p.report.Departures = append(p.report.Departures, replay.Departure{
		Kind: replay.Missing, Seq: seq, Dir: record.DirIn,
		Text: fmt.Sprintf("the server did not take the host's write of %d bytes: %v", len(b), err),
	})
	return nil
}

// leftOut reports a host frame the record has only the head of.
func (p *hostPlayer) leftOut(i int) {
	if p.hostDrops[i] {
		return
	}
	p.hostDrops[i] = true
	f := &p.rec.Host[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report.Departures = append(p.report.Departures, replay.Departure{
		Kind: replay.Unchecked, Seq: f.Seq, Dir: record.DirIn, Method: f.Method, ID: f.ID,
		Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): not sent", len(f.Head), f.Size),
	})
	if j, ok := p.respFor[i]; ok && j >= 0 {
		p.resolved[j] = true // its answer cannot come
	}
	// Nor can its progress: take the recorded notifications that carry
	// its token out of the ones to match. (Other notifications it caused,
	// such as log messages, cannot be told from the rest.)
	if len(f.Token) == 0 {
		return
	}
	q := p.noteQ[wire.MethodProgress]
	kept, n := q[:0], 0
	for _, j := range q {
		if g := &p.rec.Server[j]; wire.Key(g.Token) == wire.Key(f.Token) {
			p.resolved[j] = true
			n++
			continue
		}
		kept = append(kept, j)
	}
	p.noteQ[wire.MethodProgress] = kept
	if n > 0 {
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Unchecked, Seq: f.Seq, Dir: record.DirOut, Method: wire.MethodProgress, ID: f.ID,
			Text: fmt.Sprintf("%d progress notifications for this request, which was not sent, not expected", n),
		})
	}
}

// line returns the line to write for host frame i: a request with the id
// it is sent under (entered as pending first), a cancel naming that id,
// nothing for the recorded host's answers to server requests (the handler
// sends them).
func (p *hostPlayer) line(i int, f *replay.Frame) []byte {
	if l, ok := p.lines[i]; ok {
		return l
	}
	l := f.Line()
	switch f.Kind {
	case record.KindRequest:
		id, ok := (&wire.Message{ID: f.ID}).IntID()
		if !ok || p.usedIDs[id] {
			for p.nextID++; p.usedIDs[p.nextID]; p.nextID++ {
			}
			id = p.nextID
		}
		p.usedIDs[id] = true
		pd := p.s.newPending(id, f.Method)
		if err := p.s.addPending(pd, wire.Member(f.Body, "params")); err != nil {
			pd.complete(nil, err)
		}
		p.pend[i] = pd
		if raw := strconv.AppendInt(nil, id, 10); string(raw) != string(f.ID) {
			l = f.LineWith(raw, "id")
		}
	case record.KindNotification:
		if f.Method != wire.MethodCancelled {
			break
		}
		// The cancel names the latest request sent with that id.
		rid := wire.Member(wire.Member(f.Body, "params"), "requestId")
		at := -1
		for k := range p.pend {
			if k > at && wire.Key(p.rec.Host[k].ID) == wire.Key(rid) {
				at = k
			}
		}
		if at >= 0 {
			pd := p.pend[at]
			pd.markCancelled()
			if raw := strconv.AppendInt(nil, pd.id, 10); string(raw) != string(rid) {
				l = f.LineWith(raw, "params", "requestId")
			}
		}
	case record.KindResponse, record.KindError:
		l = nil
	}
	p.lines[i] = l
	return l
}

// depsOf returns the recorded server frames the host could have had at t:
// read whole by the proxy by then (the proxy stamps a read before it
// starts writing it on, so what the host acted on was stamped before its
// action; the end of the write is stamped after, sometimes after the host
// already acted) and, while a stall held, before the point where the host
// stopped reading. A frame the host did not wait for costs only a wait
// for what the server sends anyway.
func (p *hostPlayer) depsOf(t time.Duration) []int {
	limit := int64(-1)
	for _, st := range p.stalls {
		if st.Since <= t && (!st.Ended || t < st.Since+st.Dur) {
			limit = st.At
		}
	}
	var out []int
	for j, f := range p.rec.Server {
		if f.T <= t && !f.Unterminated && (limit < 0 || f.Off+f.Size <= limit) {
			out = append(out, j)
		}
	}
	return out
}

// waitDeps waits for the server frames the recorded host had before
// acting at t; those that do not come within Bound of the longest time
// one of them took in the record (from the host's last action before it
// began to its end; at most the gap before this action, so that a user's
// idle minutes in the field are not waited out) are reported Missing.
func (p *hostPlayer) waitDeps(ctx context.Context, t, gap time.Duration) error {
	deps := p.depsOf(t)
	var took time.Duration
	for _, j := range deps {
		took = max(took, p.latency[j])
	}
	gap = min(gap, took)
	began := time.Now()
	unresolved := func() []int {
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []int
		for _, j := range deps {
			if !p.resolved[j] {
				out = append(out, j)
			}
		}
		return out
	}
	ok, err := p.wait(ctx, func() bool { return len(unresolved()) == 0 }, p.pace.Bound(gap), true)
	if ok || err != nil {
		return err
	}
	p.missing(unresolved(), fmt.Sprintf("did not come within %v", time.Since(began).Round(time.Millisecond)))
	return nil
}

// latencies sets how long each recorded server frame took: from the
// host's last action (a write, or a frame's first byte) before its first
// byte to its last byte.
func (p *hostPlayer) latencies() {
	var acts []time.Duration
	for _, c := range p.rec.Chunks {
		if c.Dir == record.DirIn {
			acts = append(acts, c.T)
		}
	}
	for _, h := range p.rec.Host {
		acts = append(acts, h.T0)
	}
	slices.Sort(acts)
	p.latency = make([]time.Duration, len(p.rec.Server))
	for j, f := range p.rec.Server {
		var from time.Duration
		if k, _ := slices.BinarySearch(acts, f.T0+1); k > 0 {
			from = acts[k-1] // the last at or before f.T0
		}
		p.latency[j] = max(f.T-from, 0)
	}
}

// missing reports server frames that did not come.
func (p *hostPlayer) missing(js []int, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range js {
		if p.resolved[j] {
			continue
		}
		p.resolved[j] = true
		f := &p.rec.Server[j]
		d := replay.Departure{Kind: replay.Missing, Seq: f.Seq, Dir: record.DirOut, Method: f.Method, ID: f.ID, Text: "the " + f.Kind + " " + why}
		if f.Kind == record.KindResponse || f.Kind == record.KindError {
			d.Method = p.requestMethod(j)
			d.Text = "the response " + why
		}
		p.report.Departures = append(p.report.Departures, d)
	}
}

// requestMethod returns the method of the host request server frame j
// answers.
func (p *hostPlayer) requestMethod(j int) string {
	for i, r := range p.respFor {
		if r == j {
			return p.rec.Host[i].Method
		}
	}
	return ""
}

// maxSlowWaits bounds how many times wait waits d again for a server that
// is still sending when d runs out.
const maxSlowWaits = 7

// wait waits until cond holds, at most d, matching what arrives
// meanwhile; extend says a stall may be let further to get there. When d
// runs out while the server's output is still arriving (a slow server, or
// a loaded machine, not a missing message), it waits d again, at most
// maxSlowWaits times.
func (p *hostPlayer) wait(ctx context.Context, cond func() bool, d time.Duration, extend bool) (bool, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	seen, again := p.s.Stats().StdoutBytes, 0
	// The stall valve's state has no event to wait on: look again every
	// few milliseconds.
	tick := time.NewTicker(pollInterval * 2)
	defer tick.Stop()
	for {
		p.poll()
		if cond() {
			return true, nil
		}
		p.adjustStall(extend)
		p.s.mu.Lock()
		ch := p.s.changedLocked()
		p.s.mu.Unlock()
		select {
		case <-ch:
		case <-p.wake:
		case <-tick.C:
		case <-timer.C:
			p.poll()
			if cond() {
				return true, nil
			}
			if n := p.s.Stats().StdoutBytes; n != seen && again < maxSlowWaits {
				seen, again = n, again+1
				timer.Reset(d)
				continue
			}
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// poll matches what the session has received since the last look.
func (p *hostPlayer) poll() {
	// Responses.
	for i, pd := range p.pend {
		if p.checked[i] {
			continue
		}
		select {
		case <-pd.Done():
		default:
			continue
		}
		p.checked[i] = true
		p.response(i, pd)
	}
	// Notifications.
	for _, n := range p.s.takeNotifications() {
		p.notification(n)
	}
	// Junk lines and answers to requests never sent, counted.
	st := p.s.Stats()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.takeCounted(&p.junkQ, &p.junkSeen, st.JunkLines+st.ParseErrors+st.Batches, "a line that is not JSON-RPC (see the session's junk)")
	p.takeCounted(&p.unkQ, &p.unkSeen, st.UnknownIDs, "a response to no request the host sent")
}

// takeCounted matches what the session only counts (junk lines, answers
// to requests never sent), seen so far of n, to the recorded ones in q, in
// order; p.mu held.
func (p *hostPlayer) takeCounted(q *[]int, seen *int64, n int64, extra string) {
	for ; *seen < n; *seen++ {
		switch {
		case len(*q) > 0:
			p.resolved[(*q)[0]] = true
			*q = (*q)[1:]
		case len(p.gaps) > 0:
			p.lost++
		default:
			p.report.Departures = append(p.report.Departures, replay.Departure{Kind: replay.Extra, Seq: -1, Dir: record.DirOut, Text: extra})
		}
	}
}

// response matches the response to host request i.
func (p *hostPlayer) response(i int, pd *Pending) {
	f := &p.rec.Host[i]
	j := p.respFor[i]
	p.mu.Lock()
	defer p.mu.Unlock()
	if pd.err != nil {
		if errors.Is(pd.err, ErrClosed) {
			return // the session ended: the response is missing, if one was recorded
		}
		if j >= 0 {
			p.resolved[j] = true
			d := replay.Departure{
				Kind: replay.Different, Seq: p.rec.Server[j].Seq, Dir: record.DirOut, Method: f.Method, ID: f.ID,
				Text: "no usable response: " + pd.err.Error(),
			}
			if isClosed(p.s.readerDone) {
				d.Kind, d.Text = replay.Missing, "the server's stdout ended first: "+pd.err.Error()
			}
			p.report.Departures = append(p.report.Departures, d)
		}
		return
	}
	if j < 0 {
		if len(p.gaps) > 0 {
			p.lost++ // its recorded answer may be in what the record lost
			return
		}
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Extra, Seq: -1, Dir: record.DirOut, Method: f.Method, ID: f.ID,
			Text: "a response to a request the recorded server never answered",
		})
		return
	}
	if p.resolved[j] {
		// Reported missing before it came.
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("the response to %s id=%s came after it was reported missing", f.Method, f.ID))
		return
	}
	p.resolved[j] = true
	got := []byte(`{"jsonrpc":"2.0","id":0,"result":`)
	got = append(append(got, pd.resp.Result...), '}')
	if pd.resp.Error != nil {
		e, _ := json.Marshal(pd.resp.Error)
		got = append(append([]byte(`{"jsonrpc":"2.0","id":0,"error":`), e...), '}')
	}
	p.compareLocked(j, got, f.Method)
}

// compareLocked compares what came with recorded server frame j; p.mu
// held.
func (p *hostPlayer) compareLocked(j int, got []byte, method string) {
	want := &p.rec.Server[j]
	if method == "" {
		method = want.Method
	}
	diff, checked := p.rec.Compare(want, got, p.opts...)
	if !checked {
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Unchecked, Seq: want.Seq, Dir: record.DirOut, Method: method, ID: want.ID,
			Text: fmt.Sprintf("the record has only the head of this message (%d of %d bytes): it came, not compared", len(want.Head), want.Size),
		})
		return
	}
	p.report.Checked++
	if diff != "" {
		what := "message"
		switch want.Kind {
		case record.KindResponse, record.KindError:
			what = "response"
		case record.KindNotification:
			what = "notification"
		case record.KindRequest:
			what = "server request"
		}
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Different, Seq: want.Seq, Dir: record.DirOut, Method: method, ID: want.ID,
			Text: "the server sent a different " + what, Diff: diff,
		})
	}
}

// gapBetween reports whether the record lost detail between server
// frames a and b (exclusive; a may be -1).
func (p *hostPlayer) gapBetween(a, b int) bool {
	for _, g := range p.gaps {
		if g > a && g < b {
			return true
		}
	}
	return false
}

// notification matches one notification: to the next recorded one of its
// method, unless it differs and the record lost detail before that one
// (then it is taken for one of the lost, and not checked).
func (p *hostPlayer) notification(n Notification) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.lastNote[n.Method]
	if !ok {
		last = -1
	}
	q := p.noteQ[n.Method]
	if len(q) == 0 {
		if p.gapBetween(last, len(p.rec.Server)) {
			p.lost++
			return
		}
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Extra, Seq: -1, Dir: record.DirOut, Method: n.Method,
			Text: fmt.Sprintf("a notification the record has not (%d bytes)", n.Size),
		})
		return
	}
	j := q[0]
	got, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", n.Method, n.Params})
	if p.gapBetween(last, j) {
		if diff, _ := p.rec.Compare(&p.rec.Server[j], got, p.opts...); diff != "" {
			p.lost++
			return
		}
	}
	p.noteQ[n.Method] = q[1:]
	p.lastNote[n.Method] = j
	p.resolved[j] = true
	if n.Params == nil && n.Head != nil {
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Different, Seq: p.rec.Server[j].Seq, Dir: record.DirOut, Method: n.Method,
			Text: fmt.Sprintf("a notification of %d bytes where the record has %d", n.Size, p.rec.Server[j].Size),
		})
		return
	}
	p.compareLocked(j, got, "")
}

// serverRequest answers a request from the server under test with the
// recorded host's answer to the matching recorded request.
func (p *hostPlayer) serverRequest(_ context.Context, req *wire.Message) (any, error) {
	defer func() {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	q := p.srqQ[req.Method]
	if len(q) == 0 {
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Extra, Seq: -1, Dir: record.DirOut, Method: req.Method, ID: req.ID,
			Text: "a server request the record has not: answered with -32601",
		})
		return nil, &wire.RPCError{Code: wire.CodeMethodNotFound, Message: "mcpstdio replay: the record has no " + strconv.Quote(req.Method) + " request here"}
	}
	j := q[0]
	p.srqQ[req.Method] = q[1:]
	p.resolved[j] = true
	got, _ := json.Marshal(req)
	p.compareLocked(j, got, "")
	k, ok := p.answers[wire.Key(p.rec.Server[j].ID)]
	if !ok || p.rec.Host[k].Body == nil {
		return nil, &wire.RPCError{Code: wire.CodeInternalError, Message: "mcpstdio replay: the record has not the host's answer to this request"}
	}
	m, err := wire.ParseMessage(p.rec.Host[k].Body)
	if err != nil {
		return nil, &wire.RPCError{Code: wire.CodeInternalError, Message: "mcpstdio replay: the recorded answer is not JSON-RPC: " + err.Error()}
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m.Result, nil
}

// arm makes the host stop reading stdout where the recorded host did for
// the next stall, if there is one.
func (p *hostPlayer) arm() {
	if p.stall >= len(p.stalls) {
		return
	}
	p.armed, p.extended, p.quiet = true, 0, 0
	p.target = p.stallPoint()
	p.s.StallReadsAfter(max(0, p.target-p.s.valve.BytesRead()))
}

// stallPoint returns the stdout byte where the host stops for the current
// stall: the recorded point, moved by how much the last response before it
// that has come differs in its end from the recorded one.
func (p *hostPlayer) stallPoint() int64 {
	st := p.stalls[p.stall]
	var shift, best int64 = 0, -1
	for i, pd := range p.pend {
		j := p.respFor[i]
		if j < 0 || !p.checked[i] || pd.respSize.Load() == 0 {
			continue
		}
		f := &p.rec.Server[j]
		end := f.Off + f.Size + 1
		if f.CRLF {
			end++
		}
		if end <= st.At && end > best {
			best = end
			shift = pd.respStart.Load() + pd.respSize.Load() + 1 - end
		}
	}
	return st.At + shift
}

// adjustStall keeps the armed stall at its point as responses come (their
// sizes move it), and, when extend is set and the host is waiting for
// messages the recorded host had before it stopped reading, lets 4 KiB
// more through each time the valve stops inside a frame: the server under
// test wrote more before them than the recorded one.
func (p *hostPlayer) adjustStall(extend bool) {
	if !p.armed {
		return
	}
	v := p.s.valve
	if !v.Stalled() {
		p.quiet = 0
		if t := p.stallPoint(); t != p.target && t > v.BytesRead() {
			p.target = t
			p.s.StallReadsAfter(t - v.BytesRead())
		}
		return
	}
	if !extend || p.s.stdoutEmpty() {
		p.quiet = 0
		return
	}
	// The valve stops inside a frame when the framer has taken every byte
	// let through and holds the start of a line. Its counters move while
	// it works on what it read: wait until they stand still for three
	// looks (the reader has nothing left to do), so that a frame that
	// ended at the stall point and is still being dispatched is not taken
	// for a cut one.
	fs := p.s.framer.Stats()
	if fs != p.lastLook || fs.Bytes < v.BytesRead() || fs.Pending == 0 {
		p.lastLook, p.quiet = fs, 0
		return
	}
	if p.quiet++; p.quiet < 3 {
		return
	}
	p.quiet = 0
	const step = 4 << 10
	p.extended += step
	p.s.StallReadsAfter(step)
	if p.extended == step {
		p.note(fmt.Sprintf("stall seq %d: the host read past the recorded point (stdout byte %d) to get the messages the recorded host had before it stopped", p.stalls[p.stall].Seq, p.stalls[p.stall].At))
	}
}

// blocked checks, when the recorded host's stall began, that the server
// under test blocks writing its stdout. The record shows only that the
// proxy's write to the host blocked, not the server's own; but a server
// that had, as recorded, begun messages of at least twice the pipe's
// capacity past the point where the host stopped (before the host
// resumed) must block in the replay, whose one pipe cannot hold them. The
// check is made only then (else noted). The evidence is
// WaitWriterBlocked's, or the stdout pipe filled to within two pages (a
// quarter of a smaller pipe) with reads stalled: small writes fill pipes
// in fragments, which a writer blocks on before the pipe looks full by a
// page.
func (p *hostPlayer) blocked(ctx context.Context, k int) error {
	st := p.stalls[k]
	// What the recorded server had begun to write before the stall ended
	// (a frame's first byte read by then), past where the host stopped.
	var left int64
	for _, f := range p.rec.Server {
		if f.T0 <= st.Since+st.Dur && f.Off+f.Size+1 > st.At {
			left += f.Off + f.Size + 1 - max(f.Off, st.At)
		}
	}
	capacity := int64(p.s.stdout.Capacity())
	if capacity <= 0 {
		capacity = 64 << 10
	}
	if left < 2*capacity {
		p.note(fmt.Sprintf("stall seq %d not checked: the recorded server had begun %d bytes past stdout byte %d when the host resumed, which need not block it behind a %d-byte pipe", st.Seq, left, st.At, capacity))
		return nil
	}
	bctx, cancel := context.WithTimeout(ctx, p.pace.Bound(0))
	defer cancel()
	found := make(chan error, 1)
	go func() { found <- p.s.WaitWriterBlocked(bctx) }()
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var err error
	measured := false
wait:
	for {
		select {
		case err = <-found:
			break wait
		case <-tick.C:
			if b, berr := p.s.stdout.Buffered(); berr == nil {
				measured = true
				if p.s.valve.Stalled() && b > 0 && int64(b) >= capacity-min(2*4096, capacity/4) {
					cancel()
					<-found
					return nil
				}
			}
		}
	}
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if p.extended > 0 {
		// The host had to read on to get what the recorded host had read
		// before it stopped: the server wrote other output first, and the
		// stall is not where it was.
		p.note(fmt.Sprintf("stall seq %d not checked: the host read %d bytes past the recorded point (stdout byte %d) for the messages the recorded host had before it stopped (the server wrote other output before them), so it did not stop where the recorded host did", st.Seq, p.extended, st.At))
		return nil
	}
	if !measured && runtime.GOOS != "linux" {
		p.note(fmt.Sprintf("stall seq %d not checked: %s shows neither pipe fill levels nor blocked threads", st.Seq, runtime.GOOS))
		return nil
	}
	stats := p.s.Stats()
	var why string
	if !p.s.valve.Stalled() {
		why = fmt.Sprintf("the host would stop reading at stdout byte %d, where the recorded host did, but the server wrote only %d bytes", p.target, stats.StdoutBytes)
	} else {
		why = fmt.Sprintf("the host stopped reading at stdout byte %d, where the recorded host did; the server did not block writing stdout within %v", p.s.valve.BytesRead(), p.pace.Bound(0))
		if b, err := p.s.stdout.Buffered(); err == nil {
			why += fmt.Sprintf(" (its stdout pipe holds %d of %d bytes)", b, capacity)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report.Departures = append(p.report.Departures, replay.Departure{
		Kind: replay.StallNotBlocking, Seq: st.Seq, Dir: record.DirOut,
		Text: fmt.Sprintf("%s; the recorded server had begun %d bytes more by then", why, left),
	})
	return nil
}

// note adds a note to the report.
func (p *hostPlayer) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report.Notes = append(p.report.Notes, s)
}

// finish resumes reading, waits for the rest of the recorded output and
// the server's exit, and reports what is missing; played says the
// actions all ran.
func (p *hostPlayer) finish(ctx context.Context, played bool) {
	if p.armed || p.s.valve.Stalled() {
		p.armed = false
		p.s.ResumeReads()
	}
	if ctx.Err() != nil {
		return
	}
	var lastT, lastOut time.Duration
	for _, f := range p.rec.Host {
		lastT = max(lastT, f.T)
	}
	for _, f := range p.rec.Server {
		lastOut = max(lastOut, f.T)
	}
	all := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, r := range p.resolved {
			if !r {
				return false
			}
		}
		return true
	}
	began := time.Now()
	if ok, _ := p.wait(ctx, all, p.pace.Bound(lastOut-lastT), false); !ok && ctx.Err() == nil {
		var js []int
		for j := range p.rec.Server {
			js = append(js, j)
		}
		why := fmt.Sprintf("did not come within %v of the host's last action", time.Since(began).Round(time.Millisecond))
		if !played {
			why = "did not come before the replay ended"
		}
		p.missing(js, why)
	}
	// The server's exit, if the recorded one exited after its stdin
	// closed.
	r := p.rec
	if !played || r.HostEOF < 0 || r.Exit < r.HostEOF || r.ExitCode == nil {
		return
	}
	d := p.pace.Bound(r.Exit - r.HostEOF)
	ectx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ex, err := p.s.WaitExit(ectx)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil:
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Missing, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server did not exit within %v of its stdin closing; the recorded one exited with %d after %v", d.Round(time.Millisecond), *r.ExitCode, (r.Exit - r.HostEOF).Round(time.Millisecond)),
		})
	case ex.Code != *r.ExitCode && ex.Code >= 0:
		p.report.Departures = append(p.report.Departures, replay.Departure{
			Kind: replay.Different, Seq: -1, Method: "exit",
			Text: fmt.Sprintf("the server %s; the recorded one exited with %d", ex, *r.ExitCode),
		})
	}
}

// stdoutEmpty reports whether the stdout pipe is known to hold nothing.
func (s *Session) stdoutEmpty() bool {
	n, err := s.stdout.Buffered()
	return err == nil && n == 0
}
