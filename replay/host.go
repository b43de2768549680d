package replay

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cancelrule"
	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
)

// Host plays the host side of rec, a session recorded by mcpstdio proxy,
// against target, and judges the server under test. It starts target on an
// mcptest session of its own and does what the recorded host did, in the
// same order: it writes the host's bytes cut into the recorded chunks
// (requests, notifications, cancels), stops reading stdout where the
// recorded host did — and where the proxy's stop fault stopped reading it —
// for as long as it did, and closes stdin when it did (by the rules, once
// the watches of the cancels sent before have ended). By default the
// replay is causal, each action waiting, up to Patience and the recorded
// times, for what the recorded host had received before it; Timed adds the
// recorded gaps. ctx bounds it all.
//
// By default the server is judged by the rules the release criteria use
// (Report.Findings): RuleReadsWhileBlocked at each stall where the host
// wrote, RuleCancel for each cancel, RuleAnswered for every request not
// cancelled. A hang record is thus red on the server that hung and green on
// the fixed one, whatever the fixed one answers. With Same, it is judged
// by sameness instead: each message compared with the recorded one
// (Record.Compare; Ignore, CmpOptions), every difference a Departure.
// What the record holds and the replay could not play is in
// Report.Unplayed (and skipped stalls in Report.Stalls).
//
// The error is for a replay that could not run to the end (an invalid option,
// a server that did not start, ctx ending; Report.Stopped says which, and the
// report holds what was found so far) or for what closing the session found (a
// server that had to be killed).
func Host(ctx context.Context, target mcptest.Target, rec *Record, opts ...Option) (*Report, error) {
	rep, _, err := playHost(ctx, target, rec, opts)
	return rep, err
}

// TestServer is Host for tests, with the record loaded from file (with
// opts, so that Redact applies) and the replay bounded by the test's
// deadline. It calls t.Fatal if the file cannot be loaded or the server
// cannot be started, and t.Error with the whole report (Report.String,
// whose first line names the rule that failed and where in the record)
// when Report.Err is not nil: a rule failed (under Same, a departure), the
// replay could not finish, or, under Strict, something was not played or
// judged; else t.Log with it. A server that had to be killed at the end is
// a t.Error too. It returns the report.
func TestServer(t testing.TB, target mcptest.Target, file string, opts ...Option) *Report {
	t.Helper()
	rec, err := Load(file, opts...)
	if err != nil {
		t.Fatalf("replay.TestServer: %v", err)
	}
	ctx, cancel, _ := bound.Context(context.Background(), t)
	defer cancel()
	rep, started, err := playHost(ctx, target, rec, opts)
	if !started {
		t.Fatalf("replay.TestServer(%s, %s): %v", target, file, err)
	}
	if rep.Err() != nil {
		t.Errorf("replay.TestServer(%s): %s", file, rep)
	} else {
		t.Logf("replay.TestServer(%s): %s", file, rep)
	}
	if err != nil && rep.Stopped == nil {
		t.Errorf("replay.TestServer(%s, %s): %v", target, file, err)
	}
	return rep
}

// hostPlayer plays the host side of a record on a session.
type hostPlayer struct {
	s     *mcptest.Session
	rec   *Record
	o     *options
	pace  pace
	start time.Time
	wake  chan struct{} // the server-request handler matched something

	// Used by the playing goroutine only.
	pend      map[int]*mcptest.Pending // host request frame → its Pending, until its response is taken
	sentIDs   map[int]int64            // host request frame → the id it was sent with
	resps     map[int]respAt           // host request frame → where its response was, once taken
	checked   map[int]bool             // host request frames whose response was taken
	usedIDs   map[int64]bool
	nextID    int64
	respFor   map[int]int // host request frame → the recorded response (server frame), -1 none
	lines     map[int][]byte
	junkSeen  int64
	unkSeen   int64
	stalls    []Stall      // of stdout
	checks    []StallCheck // what was done with each
	stall     int          // the next or current stall
	armed     bool         // StallReadsAfter was called for stalls[stall]
	target    int64        // stdout byte it stops at
	extended  int64        // bytes let through beyond it
	quiet     int          // consecutive looks at a stalled valve with nothing changing
	deficit   int64        // how many bytes less than the recorded server the server has written, once it fell behind
	short     *shortfall   // the last stall the server did not reach
	lastLook  mcptest.StdoutState
	hostDrops map[int]bool // host frames left out (reported once)

	mu       sync.Mutex // with the server-request handler
	report   Report
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

	// Judging by the rules (not Same).
	rules     bool
	reqOf     map[int]int           // a recorded response (server frame) → the host request it answers
	tokenReq  map[string]int        // a host request's progress token → the request
	cancelOf  map[int]int           // a host cancel (host frame) → the request it names (host frame)
	cancelAt  map[int]time.Duration // a host request → when the recorded host cancelled it
	sentAt    map[int]time.Time     // a host request → when the replay sent it
	cancelled map[int]time.Time     // a host request → when the replay sent its cancel
	answered  map[int]time.Time     // a host request → when its answer came
	inStall   bool                  // between a stall's action and its resume
	stallIn   int64                 // stdin bytes written while inStall
	stallIns  int                   // writes of them
	judged    []bool                // the reads rule was judged at each stall
	deferred  [][]byte              // writes held until the stall ends: the server took nothing more
	cancelWatches
}

// playHost runs a replay; started says whether the server started.
//
// How it plays. The session has real pipes, with the recorded pipe capacity
// on Linux, and no handshake: the record has its own.
//
//   - It writes the host's bytes to stdin cut into the recorded chunks, one
//     write each, requests, notifications and cancels alike; a record without
//     bodies is played frame by frame, and a frame the record has only the
//     head of is left out (Unchecked).
//   - It stops reading stdout at the byte the record's blocked write puts it,
//     moved by how much longer or shorter the server under test's earlier
//     responses were, checks that the server then blocks writing when the
//     recorded server had begun at least twice the pipe's capacity past that
//     byte, and resumes when the recorded host did.
//
// Requests get the recorded ids (a fresh one where a recorded id was a string
// or was used before in the record), so each response is compared with the
// response to the same request in the record whatever the order;
// notifications, server requests and junk lines are matched by order, per
// method. Server requests are answered with the recorded host's answer.
// Values the proxy redacted as it recorded are sent as "[redacted]" (the
// record has not the originals), and match anything the server sends back in
// their place.
//
// The causal wait for an action is at most Patience plus twice the longest
// time one of the awaited messages took in the record, from the host's action
// before it, and no more than twice the recorded gap before the action;
// longer while the server's output is still arriving, up to 8 times that;
// then it is reported Missing. After the last action Host resumes reads,
// waits for the rest of the recorded output, reports what else came (Extra),
// and checks that the server exits after stdin closed if the recorded one did.
func playHost(ctx context.Context, target mcptest.Target, rec *Record, opts []Option) (*Report, bool, error) {
	o, err := newOptions(opts)
	if err != nil {
		return &Report{Stopped: err}, false, err
	}
	p := &hostPlayer{
		rec: rec, o: o, pace: o.pace(), wake: make(chan struct{}, 1),
		pend: map[int]*mcptest.Pending{}, sentIDs: map[int]int64{}, resps: map[int]respAt{}, checked: map[int]bool{},
		usedIDs: map[int64]bool{}, respFor: map[int]int{}, lines: map[int][]byte{}, hostDrops: map[int]bool{},
		resolved: make([]bool, len(rec.Server)),
		noteQ:    map[string][]int{}, srqQ: map[string][]int{}, answers: map[string]int{}, lastNote: map[string]int{},
		stalls: stallsOf(rec, record.DirOut),
		rules:  !o.same, reqOf: map[int]int{}, tokenReq: map[string]int{}, cancelOf: map[int]int{}, cancelAt: map[int]time.Duration{},
		sentAt: map[int]time.Time{}, cancelled: map[int]time.Time{}, answered: map[int]time.Time{},
	}
	p.judged, p.cws, p.bases = make([]bool, len(p.stalls)), map[int]*cancelWatch{}, map[int]*cancelrule.Baseline{}
	for _, st := range p.stalls {
		p.checks = append(p.checks, StallCheck{Seq: st.Seq, Dir: st.Dir, At: st.At})
	}
	p.index()
	p.latency = latencies(rec)
	s, err := mcptest.Start(ctx, target, p.sessionOptions()...)
	if err != nil {
		return &Report{Stopped: err}, false, err
	}
	p.s = s
	p.start = time.Now()
	err = p.play(ctx)
	p.finish(ctx, err == nil)
	for _, w := range p.cws {
		if w.stopObserve != nil {
			w.stopObserve()
		}
	}
	p.wg.Wait() // the cancel watches: bounded by ctx and their own watch
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
	if rec.Cut != "" {
		p.report.Notes = append(p.report.Notes, rec.Cut+": played up to it")
	}
	if p.lost > 0 {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("%d messages came where the record lost detail (or after its cut): not checked", p.lost))
	}
	if st := s.Stats(); st.NotificationsDropped > 0 {
		p.report.Notes = append(p.report.Notes, fmt.Sprintf("the host's bounds dropped %d notifications unseen (Limits)", st.NotificationsDropped))
	}
	if stopped != nil {
		p.skipStalls("the replay stopped before it: " + stopped.Error())
	} else {
		p.skipStalls("no action of the record came while it held")
	}
	p.report.Stalls = p.checks
	p.report.strict, p.report.headsOnly = o.strict, !rec.Header.Bodies
	p.report.Unplayed = append(p.report.Unplayed, rec.unplayedFaults()...)
	if p.rules {
		p.report.rules, p.report.requests, p.report.cancels = true, len(p.sentAt), len(p.cancelled)
	}
	p.report.Elapsed = time.Since(p.start)
	p.report.Stopped = stopped
	p.report.trim()
	rep := p.report
	return &rep, true, err
}

// The session's bounds for a replay: at least these, and more where the
// record holds more (mcptest's own defaults).
const (
	minMaxFrame          = 16 << 20
	minTimeout           = 10 * time.Second
	extraNotifications   = 1024
	minNotificationBytes = 16 << 20
	minNotificationHead  = 64 << 10
)

// sessionOptions returns the session's options for the record: no
// handshake (the record has its own), the recorded answers to server
// requests, bounds that keep what the record holds, the recorded pipes.
func (p *hostPlayer) sessionOptions() []mcptest.Option {
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
	for _, st := range stallsOf(r, record.DirIn) {
		stdinStall = max(stdinStall, st.Dur)
	}
	opts := []mcptest.Option{
		mcptest.WithoutHandshake(),
		mcptest.WithServerRequests(p.serverRequest),
		mcptest.WithMaxFrame(max(minMaxFrame, int(2*longest))),
		mcptest.WithTimeout(max(minTimeout, 2*stdinStall+p.pace.patience)),
		mcptest.Limits{
			Notifications:     notes + extraNotifications,
			NotificationBytes: max(minNotificationBytes, 2*noteBytes),
			NotificationHead:  int(max(minNotificationHead, longestNote+1)),
		},
	}
	if c := r.Header.Pipes.ServerStdout; c > 0 && runtime.GOOS == "linux" {
		opts = append(opts, mcptest.WithPipeCapacity(c))
	}
	return opts
}

// respAt is where a response was on stdout: all a replay keeps of it once
// compared.
type respAt struct{ off, size int64 }

// note adds a note to the report.
func (p *hostPlayer) note(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.report.Notes = append(p.report.Notes, s)
}

// depart adds a departure to the report; p.mu held.
func (p *hostPlayer) departLocked(d Departure) {
	p.report.add(d)
}
