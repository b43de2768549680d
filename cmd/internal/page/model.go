package page

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// Session is what a record holds, arranged for a person: the frames of
// each direction, each request as a span from sent to delivered, blocked
// writes and stalls as spans, and the other events as marks. Build one with
// Read, or with New and Add for a record that is still growing. Times are
// microseconds since the session started, as in the record.
type Session struct {
	Header  *Header  `json:"header,omitempty"`
	End     int64    `json:"end_us"` // the latest time in the record
	Ended   string   `json:"ended,omitempty"`
	Endings []string `json:"endings,omitempty"` // how each run of the server ended, in words
	// Summary reports whether the record holds the proxy's summary, its
	// last event. Without it (the proxy was killed, or still runs),
	// Verdicts and Metrics are worked out from the events up to End, and
	// Unended says so.
	Summary bool `json:"summary"`
	// Unended says, for a record without a summary, where it ends and
	// whether its proxy still runs (see SetProxyState); "" with a summary.
	Unended    string     `json:"unended,omitempty"`
	ProxyState ProxyState `json:"proxy_state,omitempty"`
	// Verdicts are the summary's; without one, what the events show at
	// the record's end: the durations of blocked writes, stalls and
	// unanswered requests up to End, each live verdict's words as of when
	// the proxy wrote it.
	Verdicts []record.Verdict `json:"verdicts"`
	// Metrics are the summary's; without one, counted from the events.
	Metrics *record.Metrics `json:"metrics,omitempty"`
	// Partial lists the lines whose newline the record does not reach: a
	// message still being read or delivered when it ends.
	Partial  []Partial       `json:"partial,omitempty"`
	Lost     Lost            `json:"lost"`
	Pending  []Request       `json:"pending"` // requests without a delivered response at the end
	Frames   []Frame         `json:"frames"`
	Requests []Request       `json:"requests"`
	Blocks   []Span          `json:"blocks"`
	Marks    []Mark          `json:"marks"`
	Clamped  int             `json:"clamped_times,omitempty"` // times outside 0…MaxTime in the record, shown as the nearer end
	chunks   [3][]chunk      // per direction, in offset order
	open     map[string]int  // request key → index in Requests, while unanswered
	last     map[string]int  // request key → index of its latest request in Requests
	blockAt  map[string]int  // dir → index in Blocks, while open
	stall    map[string]int  // fault dir+kind → index in Blocks, while in effect
	live     []liveVerdict   // the live verdicts, each kind and id once, while there is no summary
	liveMore int             // live verdicts not kept (maxLive)
	lastSig  string          // the last event in words when it is a signal, else ""
	cut      *record.Event   // the cut that ends a record whose writing failed
	seen     map[string]bool // live verdicts' kind and id already kept
	counts   counts          // the metrics as the events give them
	cause    string          // what the proxy did that may end the server, until its exit
	tokens   map[string]int  // progress token → request index
	lostAt   [3]int64        // per direction, 1 + the T of the latest drop or partly seen frame, 0 if none
}

// Header is the record header without what a page must not show: the
// server's environment is given as the number of its variables' names
// (values are never recorded), the working directories are left out.
type Header struct {
	Start  string           `json:"start"`
	Proxy  string           `json:"proxy"`
	OS     string           `json:"os"`
	Arch   string           `json:"arch"`
	PID    int              `json:"pid"`
	Argv   []string         `json:"argv"`
	Env    int              `json:"env_names"`
	Pipes  record.PipeSizes `json:"pipes"`
	Chunk  int              `json:"chunk"`
	Head   int              `json:"head"`
	Bodies bool             `json:"bodies"`
	Redact []string         `json:"redact,omitempty"`
	Keys   []string         `json:"keys,omitempty"`
	Faults []record.Fault   `json:"faults,omitempty"`
	Parts  int              `json:"parts"` // files of the record read
}

// Frame is one frame event: a line of N bytes of Dir whose first byte was
// read at T0 and its newline at T; Delivered is when the write holding its
// last byte returned (0: unknown or never).
type Frame struct {
	Seq          int64           `json:"seq"`
	Dir          string          `json:"dir"`
	T0           int64           `json:"t0"`
	T            int64           `json:"t"`
	Delivered    int64           `json:"delivered,omitempty"`
	Off          int64           `json:"off"`
	N            int64           `json:"n"`
	Kind         string          `json:"kind"`
	ID           json.RawMessage `json:"id,omitempty"`
	Method       string          `json:"method,omitempty"`
	Tool         string          `json:"tool,omitempty"`
	Head         string          `json:"head,omitempty"`
	Hash         string          `json:"hash,omitempty"`
	Redacted     int             `json:"redacted,omitempty"`
	Gap          bool            `json:"gap,omitempty"`
	Scanned      bool            `json:"scanned,omitempty"`
	Unterminated bool            `json:"unterminated,omitempty"`
	crlf         bool            // it ended "\r\n": its newline is at Off+N+1
}

// Request is one request from its first byte (Sent) to the delivery of its
// response's last byte (Delivered), with indexes of its frames in
// Session.Frames (-1: none). State is "delivered", "responding" (the
// response was read but not all delivered, or is being read: RespRead),
// "waiting" (no response),
// "unseen" (no response seen, but the observer lost detail of the stream
// it comes on after the request was sent: it may have passed) or
// "unwritten" (the request's own write did not return).
type Request struct {
	Dir       string          `json:"dir"` // the request's direction
	ID        json.RawMessage `json:"id"`
	Method    string          `json:"method"`
	Tool      string          `json:"tool,omitempty"`
	Sent      int64           `json:"sent"`
	Written   int64           `json:"written,omitempty"` // its write to the receiver returned
	RespStart int64           `json:"resp_start,omitempty"`
	RespEnd   int64           `json:"resp_end,omitempty"`
	Delivered int64           `json:"delivered,omitempty"`
	RespBytes int64           `json:"resp_bytes,omitempty"`
	// RespRead and RespSent are the bytes of a response whose newline the
	// record does not reach (see Partial): read from the server so far,
	// and delivered of those.
	RespRead int64  `json:"resp_read,omitempty"`
	RespSent int64  `json:"resp_sent,omitempty"`
	Error    bool   `json:"error,omitempty"` // the response was an error
	Cancel   int64  `json:"cancel,omitempty"`
	CancelAt string `json:"cancel_state,omitempty"` // where it was when the cancel was read
	LateUS   int64  `json:"late_us,omitempty"`      // the response began this long after the cancel
	Progress int    `json:"progress,omitempty"`
	State    string `json:"state"`
	Frame    int    `json:"frame"`
	Response int    `json:"response"`
}

// Span is a blocked write (Kind "block": the write of N bytes to Dir's
// destination from Since to End) or a stall a fault made (Kind "stop" or
// "sigstop"). End is 0 while it lasts.
type Span struct {
	Kind  string `json:"kind"`
	Dir   string `json:"dir"`
	Since int64  `json:"since"`
	End   int64  `json:"end,omitempty"`
	N     int64  `json:"n,omitempty"`
	Text  string `json:"text,omitempty"`
}

// Mark is an event at one moment: a cancel, a late answer, a fault, an
// ending (eof, close, signal, exit), the proxy's own error, lost detail or
// a live verdict.
type Mark struct {
	T    int64           `json:"t"`
	Ev   string          `json:"ev"`
	Dir  string          `json:"dir,omitempty"`
	ID   json.RawMessage `json:"id,omitempty"`
	Text string          `json:"text"`
}

// Partial is a line of Dir whose newline the record does not reach: a
// message still being read or delivered when the record ends. From Off
// on, Read bytes of it were read (the first at Since) and Delivered of
// them written on. ID is the request it answers, when a verdict of the
// proxy's named it (its id is only recorded with its end).
type Partial struct {
	Dir       string          `json:"dir"`
	Off       int64           `json:"off"`
	Since     int64           `json:"since"`
	Read      int64           `json:"read"`
	Delivered int64           `json:"delivered"`
	ID        json.RawMessage `json:"id,omitempty"`
}

type chunk struct{ off, n, t, wt int64 }

// New returns an empty Session for Add.
func New() *Session {
	return &Session{
		Verdicts: []record.Verdict{}, Pending: []Request{}, Frames: []Frame{}, Requests: []Request{},
		Blocks: []Span{}, Marks: []Mark{},
		open: map[string]int{}, last: map[string]int{}, blockAt: map[string]int{}, stall: map[string]int{}, seen: map[string]bool{}, tokens: map[string]int{},
	}
}

// Read reads a whole record (each file of a rotated one in turn, oldest
// first) and returns its Session, finished. A record cut off in its last
// line (the proxy was killed) is read up to that line, and the error says
// so.
func Read(files ...io.Reader) (*Session, error) {
	s := New()
	var err error
	for _, f := range files {
		if err = record.Read(f, func(e record.Event) error { s.Add(e); return nil }); err != nil {
			break
		}
	}
	s.Finish()
	return s, err
}

func dirIndex(d string) int {
	switch d {
	case record.DirOut:
		return 1
	case record.DirErr:
		return 2
	}
	return 0
}

func other(d string) string {
	if d == record.DirIn {
		return record.DirOut
	}
	return record.DirIn
}

// key is a request's identity: its direction and its id as compact JSON.
func key(dir string, id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return dir + " " + string(id)
	}
	return dir + " " + b.String()
}

// Add takes the next event of the record.
func (s *Session) Add(e record.Event) {
	s.clampTimes(&e)
	s.End = max(s.End, e.T)
	s.lastSig = ""
	if e.Ev == record.EvSignal {
		s.lastSig = e.Signal + ", " + e.Text
	}
	switch e.Ev {
	case record.EvHeader:
		s.header(e.Header)
	case record.EvChunk:
		d := dirIndex(e.Dir)
		s.chunks[d] = append(s.chunks[d], chunk{e.Off, e.N, e.T, e.WT})
		s.End = max(s.End, e.WT)
		s.counts.chunk(d, e)
	case record.EvFrame:
		s.frame(e)
	case record.EvBlock:
		s.blockAt[e.Dir] = len(s.Blocks)
		s.Blocks = append(s.Blocks, Span{Kind: "block", Dir: e.Dir, Since: e.Since, N: e.N, Text: e.Text})
	case record.EvUnblock:
		// One write is in progress per direction: the unblock ends the
		// open block of its direction (its Since may differ by rounding).
		if i, ok := s.blockAt[e.Dir]; ok {
			s.Blocks[i].End = e.Since + e.Dur
			delete(s.blockAt, e.Dir)
		} else {
			s.Blocks = append(s.Blocks, Span{Kind: "block", Dir: e.Dir, Since: e.Since, End: e.Since + e.Dur, N: e.N})
		}
		s.counts.unblock(dirIndex(e.Dir), e)
	case record.EvCancel:
		s.counts.m.Cancels++
		s.cancel(e)
	case record.EvLate:
		s.counts.m.LateResponses++
		if i, ok := s.latest(other(e.Dir), e.ID); ok {
			s.Requests[i].LateUS = e.After
		}
		s.mark(e, "late", describe(e.ID, e.Method, e.Tool)+": its response began "+dur(e.After)+" after the cancel was forwarded")
	case record.EvFault:
		s.fault(e)
	case record.EvDrop:
		s.counts.m.DroppedBytes += e.Bytes
		s.counts.m.DroppedEvents += e.Events
		s.Lost.Bytes += e.Bytes
		s.Lost.Events += e.Events
		s.lostAt[dirIndex(e.Dir)] = max(s.lostAt[dirIndex(e.Dir)], e.T+1)
		s.mark(e, "drop", e.Text+" ("+size(e.Bytes)+", "+itoa(e.Events)+" events)")
	case record.EvVerdict:
		if e.Verdict != nil && !s.Summary {
			s.liveVerdict(e.T, *e.Verdict)
			s.Marks = append(s.Marks, Mark{T: e.T, Ev: "verdict", ID: e.Verdict.ID, Text: e.Verdict.Text})
		}
	case record.EvSummary:
		s.Summary, s.Unended, s.live = true, "", nil
		s.Verdicts = append([]record.Verdict{}, e.Verdicts...)
		s.Metrics = e.Metrics
		if e.Metrics != nil {
			s.Lost.Forgotten = e.Metrics.Forgotten
		}
	case record.EvExit:
		s.counts.m.Terminations++
		s.Ended = "the server ended: " + e.Status
		s.mark(e, "exit", s.Ended)
		s.ending(e)
	case record.EvCut:
		s.cut = &e
		s.mark(e, "cut", "the record ends here, early: writing it failed: "+e.Err+" ("+itoa(e.Events)+" events lost with the failed write); the proxy went on forwarding, unrecorded")
	case record.EvSpawn:
		s.mark(e, "spawn", "the server started (pid "+itoa(int64(e.PID))+")")
	case record.EvEOF, record.EvClose, record.EvSignal, record.EvError:
		s.ending(e)
		text := e.Text
		if e.Signal != "" && !strings.Contains(text, e.Signal) {
			text += " (" + e.Signal + ")"
		}
		if e.Err != "" {
			text += ": " + e.Err
		}
		s.mark(e, e.Ev, text)
	}
}

func (s *Session) header(h *record.Header) {
	if h == nil {
		return
	}
	if s.Header != nil {
		s.Header.Parts++
		return
	}
	s.Header = &Header{
		Start: h.Start.UTC().Format("2006-01-02 15:04:05.000 UTC"), Proxy: h.Proxy, OS: h.OS, Arch: h.Arch, PID: h.PID,
		Argv: h.Argv, Env: len(h.EnvKeys), Pipes: h.Pipes, Chunk: h.Chunk, Head: h.Head, Bodies: h.Bodies,
		Redact: h.Redact, Keys: h.Keys, Faults: h.Faults, Parts: 1,
	}
}

func (s *Session) mark(e record.Event, ev, text string) {
	s.Marks = append(s.Marks, Mark{T: e.T, Ev: ev, Dir: e.Dir, ID: e.ID, Text: text})
}

// latest returns the request of dir with id: the one awaiting its
// response, else the latest one (its response may have been read).
func (s *Session) latest(dir string, id json.RawMessage) (int, bool) {
	k := key(dir, id)
	if i, ok := s.open[k]; ok {
		return i, true
	}
	i, ok := s.last[k]
	return i, ok
}

func (s *Session) frame(e record.Event) {
	f := Frame{Seq: e.Seq, Dir: e.Dir, T0: e.T0, T: e.T, Off: e.Off, N: e.N, Kind: e.Kind, ID: e.ID, Method: e.Method, Tool: e.Tool,
		Head: e.Head, Hash: e.Hash, Redacted: e.Redacted, Gap: e.Gap, Scanned: e.Scanned, Unterminated: e.Unterminated, crlf: e.CRLF}
	if f.Gap {
		s.Lost.Frames++
		s.lostAt[dirIndex(e.Dir)] = max(s.lostAt[dirIndex(e.Dir)], e.T+1)
	}
	s.counts.frame(e)
	fi := len(s.Frames)
	s.Frames = append(s.Frames, f)
	switch e.Kind {
	case record.KindRequest:
		if e.Dir == record.DirErr {
			return
		}
		k := key(e.Dir, e.ID)
		s.open[k] = len(s.Requests)
		s.last[k] = len(s.Requests)
		if len(e.Token) > 0 {
			s.tokens[string(e.Token)] = len(s.Requests)
		}
		s.Requests = append(s.Requests, Request{Dir: e.Dir, ID: e.ID, Method: e.Method, Tool: e.Tool, Sent: e.T0, Frame: fi, Response: -1})
	case record.KindResponse, record.KindError:
		if len(e.ID) == 0 {
			return
		}
		k := key(other(e.Dir), e.ID)
		i, ok := s.open[k]
		if !ok {
			s.counts.unknown(e)
			return
		}
		delete(s.open, k)
		r := &s.Requests[i]
		r.Response, r.RespStart, r.RespEnd, r.RespBytes, r.Error = fi, e.T0, e.T, e.N, e.Kind == "error"
	case record.KindNotification:
		if e.Method == "notifications/progress" && len(e.Token) > 0 {
			if i, ok := s.tokens[string(e.Token)]; ok {
				s.Requests[i].Progress++
			}
		}
	}
}

func (s *Session) cancel(e record.Event) {
	text := "cancel of " + describe(e.ID, e.Method, e.Tool) + " read while it was " + e.State
	if e.N > 0 {
		text += " (" + size(e.N) + " of its response read, " + size(e.Bytes) + " of that delivered)"
	}
	if e.Reason != "" {
		text += " (" + e.Reason + ")"
	}
	s.mark(e, "cancel", text)
	if i, ok := s.latest(e.Dir, e.ID); ok { // a cancel goes the way of its request
		s.Requests[i].Cancel, s.Requests[i].CancelAt = e.T, e.State
	}
}

// fault keeps a stop or sigstop as a stall span from its "stopped" event
// to the next event of the same fault, and every fault event as a mark.
func (s *Session) fault(e record.Event) {
	kind := ""
	if e.Fault != nil {
		kind = e.Fault.Kind
	}
	text := "fault " + e.Dir + ":" + kind + ": " + e.Text
	if e.Err != "" {
		text += ": " + e.Err
	}
	s.mark(e, "fault", text)
	if kind != "stop" && kind != "sigstop" {
		return
	}
	k := e.Dir + " " + kind
	if i, ok := s.stall[k]; ok {
		s.Blocks[i].End = e.T
		s.counts.stall(s.Blocks[i])
		delete(s.stall, k)
		return
	}
	if strings.HasPrefix(e.Text, "stopped") {
		s.stall[k] = len(s.Blocks)
		s.Blocks = append(s.Blocks, Span{Kind: kind, Dir: e.Dir, Since: e.T, Text: e.Text})
	}
}

// Finish resolves what needs the whole record: when each frame was
// delivered, each request's state, the pending list, the order of marks.
// Add may be called again after Finish (a live record); call Finish again
// then.
func (s *Session) Finish() {
	for d := range s.chunks {
		c := s.chunks[d]
		if !sort.SliceIsSorted(c, func(i, j int) bool { return c[i].off < c[j].off }) {
			sort.SliceStable(c, func(i, j int) bool { return c[i].off < c[j].off })
		}
	}
	for i := range s.Frames {
		f := &s.Frames[i]
		if f.Delivered == 0 {
			f.Delivered = s.writtenAt(f.Dir, f.lastByte())
		}
	}
	s.partials()
	s.Pending = s.Pending[:0]
	for i := range s.Requests {
		r := &s.Requests[i]
		r.Written = s.Frames[r.Frame].Delivered
		switch {
		case r.Response >= 0 && s.Frames[r.Response].Delivered > 0:
			r.Delivered, r.State = s.Frames[r.Response].Delivered, "delivered"
		case r.Response >= 0 || r.RespRead > 0:
			r.State = "responding"
		case r.Written == 0 && s.hasChunks(r.Dir):
			r.State = "unwritten"
		case s.lostAt[dirIndex(other(r.Dir))] > r.Sent:
			r.State = "unseen"
		default:
			r.State = "waiting"
		}
		if r.State != "delivered" {
			s.Pending = append(s.Pending, *r)
		}
	}
	sort.SliceStable(s.Marks, func(i, j int) bool { return s.Marks[i].T < s.Marks[j].T })
	if !s.Summary {
		s.Metrics = s.eventMetrics()
		s.Verdicts = s.unendedVerdicts()
		s.Unended = s.unendedText()
	}
}

func (s *Session) hasChunks(dir string) bool { return len(s.chunks[dirIndex(dir)]) > 0 }

// lastByte is the offset of the frame's last byte on the wire: its
// newline, or, in a line the stream ended before its newline, its last.
func (f *Frame) lastByte() int64 {
	switch {
	case f.Unterminated:
		return f.Off + f.N - 1
	case f.crlf:
		return f.Off + f.N + 1
	}
	return f.Off + f.N
}

// writtenAt returns when the write of the chunk holding byte b of dir
// returned; 0 if unknown. A record without chunk events (none kept) gives
// 0.
func (s *Session) writtenAt(dir string, b int64) int64 {
	c := s.chunks[dirIndex(dir)]
	i := sort.Search(len(c), func(i int) bool { return c[i].off+c[i].n > b })
	if i == len(c) || c[i].off > b {
		return 0
	}
	return c[i].wt
}
