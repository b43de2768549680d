package proxy

import (
	"encoding/json"
	"os"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// Status is what a proxy sees at one moment: the pending requests with
// their ages, each direction's state and the verdicts. Proxy.Status
// returns it and Config.OnStatus gets it.
type Status struct {
	ProxyPID  int       `json:"proxy_pid"`
	ServerPID int       `json:"server_pid"`
	Argv      []string  `json:"argv"`
	Start     time.Time `json:"start"`
	// Updated is when the status is as of. Behind traffic it cannot
	// follow (a flood of small lines), the observer reports what it has
	// seen: Updated is then the time of the oldest event it has not
	// looked at yet, older than the report.
	Updated time.Time `json:"updated"`
	Running bool      `json:"running"` // the server has not exited
	Exit    *ExitInfo `json:"exit,omitempty"`
	// RecordError says why the record is no longer written (a write
	// failed: it ends with a record.EvCut event); "" while it is, or
	// without one.
	RecordError string `json:"record_error,omitempty"`

	Streams  []StreamStatus   `json:"streams"`
	Pending  []PendingStatus  `json:"pending"`
	Verdicts []record.Verdict `json:"verdicts"`
	Metrics  record.Metrics   `json:"metrics"`
}

// StreamStatus is one direction's state.
type StreamStatus struct {
	Dir     string `json:"dir"`     // record.DirIn, record.DirOut, record.DirErr
	Read    int64  `json:"read"`    // bytes read from the source
	Written int64  `json:"written"` // source bytes written on
	Writes  int64  `json:"writes"`  // write calls on the destination
	// Delivered is the bytes written to the destination: Written less
	// what faults dropped or held, plus what they duplicated.
	Delivered int64 `json:"delivered"`
	// BlockedUS is how long the write in progress has taken so far, and
	// BlockedBytes its size; 0 when no write is in progress.
	BlockedUS    int64 `json:"blocked_us,omitempty"`
	BlockedBytes int64 `json:"blocked_bytes,omitempty"`
	// Spliced: the write in progress is a splice (Linux, pipe to pipe):
	// its bytes are still in the source's pipe, the proxy holds none.
	Spliced bool `json:"spliced,omitempty"`
	// SourcePipe and DestPipe are the bytes waiting in the kernel pipes on
	// either side (Linux), nil where unknown.
	SourcePipe *int  `json:"source_pipe,omitempty"`
	DestPipe   *int  `json:"dest_pipe,omitempty"`
	IdleUS     int64 `json:"idle_us,omitempty"` // since the last byte was read
	Ended      bool  `json:"ended,omitempty"`   // the source has ended
	// Current is the line in progress: its id and method as far as seen,
	// and its bytes so far.
	Current *CurrentFrame `json:"current,omitempty"`
}

// CurrentFrame is a line whose newline has not arrived yet.
type CurrentFrame struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Bytes  int64           `json:"bytes"`
}

// PendingStatus is one request awaiting its response (or its delivery).
type PendingStatus struct {
	Dir    string          `json:"dir"` // the request's direction: record.DirIn from the host, record.DirOut from the server
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Tool   string          `json:"tool,omitempty"`
	AgeUS  int64           `json:"age_us"` // since its first byte was read
	// State is "unwritten" (the request is not yet written whole to the
	// other side), "waiting" (for its response), "unseen" (no response
	// seen, but detail of its response's stream was lost since it was
	// written: its response may have passed unseen), "responding" (its
	// response is being read: its first bytes came, its newline not yet),
	// "delivering" (its response was read whole, and is being written to
	// the requester) or "cancelled" (its cancel was read; ResponseBytes
	// says whether its response had begun).
	State    string `json:"state"`
	Progress int    `json:"progress,omitempty"`
	// CancelledUS is how long ago its cancel was read, 0 if none was.
	CancelledUS int64 `json:"cancelled_us,omitempty"`
	// ResponseBytes is how much of its response has been read from the
	// responder (so far while it is being read), and ResponseDelivered
	// how much of that has been written to the requester.
	ResponseBytes     int64 `json:"response_bytes,omitempty"`
	ResponseDelivered int64 `json:"response_delivered,omitempty"`
}

// status builds a Status at now.
func (o *observer) status(now time.Time) Status {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := Status{
		ProxyPID: os.Getpid(), Argv: o.p.argv,
		Start: o.start, Updated: now, Running: o.exit == nil, Exit: o.exit, Metrics: o.metrics(),
		Pending: []PendingStatus{},
	}
	if o.p.cmd.Process != nil {
		st.ServerPID = o.p.cmd.Process.Pid
	}
	if err := o.p.rec.failed(); err != nil {
		st.RecordError = err.Error()
	}
	for _, d := range o.dirs {
		s := StreamStatus{Dir: dirNames[d.d], Read: d.fw.read.Load(), Written: d.fw.written.Load(), Writes: d.fw.writes.Load(), Delivered: d.fw.delivered.Load(), Ended: !d.eof.IsZero()}
		if b, n := o.blockedWrite(d.d, now); b > 0 {
			s.BlockedUS, s.BlockedBytes, s.Spliced = b.Microseconds(), n, d.fw.splicing.Load()
		}
		if n, ok := pipeBuffered(d.fw.src); ok && !s.Ended {
			s.SourcePipe = &n
		}
		if n, ok := pipeBuffered(d.fw.dst); ok {
			s.DestPipe = &n
		}
		if !d.lastByte.IsZero() {
			s.IdleUS = now.Sub(d.lastByte).Microseconds()
		}
		if id, method, sz, ok := d.fa.current(); ok {
			s.Current = &CurrentFrame{ID: id, Method: method, Bytes: sz}
		}
		st.Streams = append(st.Streams, s)
	}
	for _, r := range o.sortedPending() {
		ps := PendingStatus{Dir: dirNames[r.d], ID: r.id, Method: r.method, Tool: r.tool, AgeUS: now.Sub(r.sent).Microseconds(), Progress: r.progress}
		ps.State = o.stage(r)
		ps.ResponseBytes, ps.ResponseDelivered = o.responseBytes(r)
		if !r.cancelRead.IsZero() {
			ps.State = "cancelled"
			ps.CancelledUS = now.Sub(r.cancelRead).Microseconds()
		}
		st.Pending = append(st.Pending, ps)
	}
	if o.ended {
		st.Verdicts = o.finalVerdicts(now)
	} else {
		st.Verdicts = o.liveVerdicts(now)
	}
	if st.Verdicts == nil {
		st.Verdicts = []record.Verdict{}
	}
	return st
}

// reportStatus calls OnStatus; its first error is recorded.
func (o *observer) reportStatus(now time.Time) {
	if err := o.cfg.OnStatus(o.status(now)); err != nil && !o.statusErr {
		o.statusErr = true
		o.emit(now, record.Event{Ev: record.EvError, Text: "the status could not be reported (Config.OnStatus)", Err: err.Error()})
	}
}
