package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
)

// ErrExited is returned by Serve when a fault (Faults.ExitAfterBytes,
// Faults.NoFinalNewline) made the server stop on purpose.
var ErrExited = errors.New("fakeserver: exited on purpose (fault)")

// codeRequestCancelled is the error code of the response
// Faults.RespondAfterCancel writes for cancelled work: mcp-go v1.2.1 writes
// -32603 "context canceled" (the official Go SDK v1.8.0 writes code 0 with
// the same message).
const codeRequestCancelled = -32603

// Server is a small MCP server over stdio whose tools and faults are chosen
// by its Options. Create it with New, run it with Serve (once), and read what
// it saw with Report.
type Server struct {
	cfg   config
	tools []tool // the tools offered, in tools/list order

	mu          sync.Mutex // guards what follows
	rep         Report
	works       map[string]*work // running requests by id (JSON text)
	finished    map[string]bool  // ids whose work has ended
	idleStarted bool             // Faults.IdleNotifyBytes has begun
	served      bool
	logOff      bool

	dirty chan struct{} // report changed (capacity 1)

	fmu         sync.Mutex // the report file's writers, one at a time
	unmarked    string     // the trace of an unwritten report left beside it, "" if none (fmu)
	reportFails int        // writes of the report file failed in a row (fmu)
	reportSay   string     // what the report file's writer had to say once the log was off (fmu)

	wmu sync.Mutex // the write lock: one frame at a time on stdout
	out *outWriter

	base   context.Context // Serve's context: work contexts derive from it
	wg     sync.WaitGroup  // work goroutines and fault writers
	sem    chan struct{}   // concurrency slots, nil for no limit
	msgs   int             // messages read; only the read loop touches it
	remote remoteSource

	eofCancel atomic.Bool // the work is cancelled by stdin's end

	exitOnce sync.Once
	exitCh   chan struct{}
	exitErr  error

	logCh  chan string
	stderr io.Writer
	stdio  bool     // started by ServeStdio: the process's own stdio
	stdin  *os.File // the process's stdin under ServeStdio, for noteUnread
}

// New returns a Server configured by opts. It does nothing until Serve.
func New(opts ...Option) *Server {
	s := &Server{
		cfg:      defaultConfig(),
		works:    map[string]*work{},
		finished: map[string]bool{},
		dirty:    make(chan struct{}, 1),
		exitCh:   make(chan struct{}),
		logCh:    make(chan string, 64),
	}
	for _, o := range opts {
		o.apply(&s.cfg)
	}
	if s.cfg.concurrency > 0 {
		s.sem = make(chan struct{}, s.cfg.concurrency)
	}
	for _, t := range toolTable {
		if s.cfg.tools[t.Name] {
			s.tools = append(s.tools, t)
		}
	}
	return s
}

// work is one request's work.
type work struct {
	id      string          // JSON text of the id
	rawID   json.RawMessage // the id as received
	method  string
	params  requestParams
	perr    error // params did not decode
	modern  bool  // the request carried the 2026-07-28 _meta
	version string
	ctx     context.Context
	cancel  context.CancelFunc
	plan    faultPlan
	reqIdx  int // index in s.rep.Requests

	// guarded by s.mu
	state         WorkState
	cancelled     bool  // a notifications/cancelled stopped it
	cancels       []int // indexes in s.rep.Cancels
	suppressed    bool
	cut           bool
	respBytes     int64
	childKilled   bool
	remoteAborted bool
}

type requestParams struct {
	Meta            map[string]json.RawMessage `json:"_meta"`
	Name            string                     `json:"name"`
	Arguments       json.RawMessage            `json:"arguments"`
	ProtocolVersion string                     `json:"protocolVersion"`
}
