package record

import (
	"encoding/json"
	"time"
)

// SchemaVersion is the version of the record format, in every header event
// ("v"). It changes when a field changes meaning or disappears; new fields
// and new event kinds do not change it, and readers ignore what they do not
// know.
const SchemaVersion = 1

// Event kinds, the "ev" field of a record line. See Event for their fields.
const (
	EvHeader  = "header"  // first line of every file of a record
	EvSpawn   = "spawn"   // the server started
	EvChunk   = "chunk"   // one read from a source, and when its write ended
	EvFrame   = "frame"   // one newline-terminated line of a stream
	EvBlock   = "block"   // a write has been in progress for BlockEvent
	EvUnblock = "unblock" // that write ended
	EvCancel  = "cancel"  // notifications/cancelled went by, and where its request was
	EvLate    = "late"    // a response began after its request's cancel was forwarded
	EvEOF     = "eof"     // a source ended (or failed)
	EvClose   = "close"   // the proxy closed a pipe, and why
	EvSignal  = "signal"  // the proxy got a signal and passed it on (or could not)
	EvExit    = "exit"    // the server ended
	EvFault   = "fault"   // an injected fault fired or ended
	EvDrop    = "drop"    // the observer fell behind and dropped detail (never traffic)
	EvVerdict = "verdict" // a verdict appeared (live)
	EvSummary = "summary" // last line: metrics and verdicts at exit
	EvError   = "error"   // the proxy's own trouble (status file, record, pipe setup)
	EvTick    = "tick"    // the proxy runs, and the metrics so far, after a quiet spell
	EvCut     = "cut"     // the record ends here, early: writing it failed
)

// Directions of a stream, the "dir" field.
const (
	DirIn  = "in"  // host → server: the host's writes to the server's stdin
	DirOut = "out" // server → host: the server's stdout
	DirErr = "err" // server → host: the server's stderr
)

// Event is one line of a record: a JSON object, written as it happens
// (the proxy writes each batch of events it takes with one write(2)). Every event has Seq, T and Ev; the other fields depend on
// Ev, and are omitted when empty.
//
// Times are microseconds since the session started (monotonic clock); the
// header's Start gives the wall clock. Events of one direction appear in
// time order; across directions, order by T. Offsets and sizes are bytes
// on the wire of the source stream (what the proxy read).
type Event struct {
	Seq int64  `json:"seq"` // 0, 1, 2, … across all files of one record
	T   int64  `json:"t"`   // µs since start
	Ev  string `json:"ev"`

	// Header (EvHeader only).
	Header *Header `json:"header,omitempty"`

	Dir string `json:"dir,omitempty"` // DirIn, DirOut, DirErr

	// Chunk: bytes [Off, Off+N) of Dir were read at T (the read returned),
	// and their write to the destination returned at WT (0: it never
	// returned). Both are taken when the forwarder runs again after the
	// system call, which on a loaded machine can be later than the kernel
	// finished; a verdict that compares them (late) leans towards not
	// calling a response late. Data (valid UTF-8) or B64 (otherwise, base64) hold the
	// chunk's bytes after redaction when the record keeps bodies.
	Off  int64  `json:"off,omitempty"`
	N    int64  `json:"n,omitempty"`
	WT   int64  `json:"wt,omitempty"`
	Data string `json:"data,omitempty"`
	B64  []byte `json:"b64,omitempty"`
	// T is when the proxy read the bytes, not when they were written: a
	// write that found the proxy not reading (its write on was blocked, a
	// fault held it) waited in the pipe, and T is late for it. Waited
	// says so (Linux, pipes): set when the proxy had not read the source
	// for a millisecond or more, it is how many bytes were already in the
	// source's pipe when this read was issued, at RT. Those bytes (the
	// first Waited of this chunk and, past N, of the next ones) were
	// written before RT, since the previous read, while the proxy was not
	// reading: a host's write that waited so is itself evidence that the
	// proxy, hence the server, was not reading. Waited is 0 (absent) when
	// nothing waited or it was not measured.
	Waited int64 `json:"waited,omitempty"`
	RT     int64 `json:"rt,omitempty"`
	// A chunk marked Gap stands for bytes whose own chunk events the
	// observer lost (see EvDrop): T is when that was found, and WT, if
	// set, a time by which their writes had all returned.
	//
	// Reads > 1: the chunk stands for that many small reads and writes,
	// merged while the observer was behind (T is the first read, WT the
	// last write): every byte is there, the boundaries between them are
	// not.
	Reads int `json:"reads,omitempty"`

	// Frame: a line of N bytes (without its terminator) starting at Off,
	// whose first byte was read at T0 and whose newline at T. Kind is
	// "request", "notification", "response", "error" (an error response)
	// or "junk" (not JSON-RPC). Scanned: the frame was over the parse limit,
	// so it was not parsed: Kind comes from the top-level id and method a
	// constant-memory scan found, and the frame was not validated. Head is the
	// first HeadBytes of the frame after redaction. Hash is "crc32c:<8 hex
	// digits>", the CRC-32C of the whole frame after redaction (the frame
	// as forwarded when Redacted is 0): a checksum for telling frames of
	// the same size apart in a replay, cheap enough for every byte; it is
	// not a cryptographic hash and hides nothing (redaction does that).
	// CRLF: the line ended "\r\n".
	// Unterminated: the stream ended before its newline. Gap: the observer
	// lost part of it (see EvDrop), so Hash and Head may be missing; such a
	// frame has a Kind and ID only when what was seen makes it a response
	// (its start, a top-level id and no method, the loss inside its result
	// or error).
	T0           int64           `json:"t0,omitempty"`
	Kind         string          `json:"kind,omitempty"`
	ID           json.RawMessage `json:"id,omitempty"`
	Method       string          `json:"method,omitempty"`
	Tool         string          `json:"tool,omitempty"`
	Token        json.RawMessage `json:"token,omitempty"` // progress token (a request's, or a progress notification's)
	Code         int64           `json:"code,omitempty"`  // error code of an error response
	Head         string          `json:"head,omitempty"`
	Hash         string          `json:"hash,omitempty"`
	Redacted     int             `json:"redacted,omitempty"` // values replaced in this frame
	CRLF         bool            `json:"crlf,omitempty"`
	Unterminated bool            `json:"unterminated,omitempty"`
	Gap          bool            `json:"gap,omitempty"`
	Scanned      bool            `json:"scanned,omitempty"`

	// Cancel (ID is the cancelled request's id, Dir the cancel's
	// direction): State is where the request was when the cancel was read:
	// "unknown" (no such request pending), "unwritten", "waiting" (written,
	// no response yet), "unseen" (the observer lost detail of the stream
	// its response comes on, since it was written: the response, or its
	// end, may have passed), "responding" (its response is arriving),
	// "delivering" (its response was read whole and is being delivered);
	// then (responding, delivering) N is how much of the response had been
	// read, and Bytes how much of that delivered.
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`

	// Block/unblock: the write of N bytes to Dir's destination began at
	// Since; Dur is how long it took (unblock only).
	Since int64 `json:"since,omitempty"`
	Dur   int64 `json:"dur,omitempty"`

	// Late (ID, Method of the request): After is µs from the cancel being
	// forwarded to the response's first byte.
	After int64 `json:"after,omitempty"`

	// Lifecycle: PID (spawn), Code/Signal/Status (exit), Signal
	// (EvSignal), Text (what happened, in words), Err (an error).
	PID    int    `json:"pid,omitempty"`
	Signal string `json:"signal,omitempty"`
	Status string `json:"status,omitempty"`
	Exit   *int   `json:"exit,omitempty"` // the server's exit code; absent if killed by a signal
	Text   string `json:"text,omitempty"`
	Err    string `json:"err,omitempty"`

	// Fault: the fault as configured.
	Fault *Fault `json:"fault,omitempty"`

	// Drop: what the observer did not see (bytes of Dir, chunk events)
	// since the last drop event. Cut: Events is how many events the write
	// that failed held, lost with it.
	Bytes  int64 `json:"bytes,omitempty"`
	Events int64 `json:"events,omitempty"`

	// Tick: the proxy was running at T, and nothing else had been written
	// for a second (its status interval: while a request is pending, a
	// write is blocked or a fault holds a direction) or a minute
	// (otherwise), so that a record
	// cut short by a kill says, to that precision, when it ends. Metrics
	// are the metrics so far (those of the summary, which such a record
	// lacks; a blocked write still in progress is not in them yet).
	//
	// Cut: the last line of a record whose writing failed (a full disk,
	// a file size limit): Err says why, Events how many events were lost
	// with the failed write, and nothing after the cut was recorded; the
	// proxy went on forwarding. A record without a summary and without a
	// cut was cut short by the proxy's death (a kill).

	// Verdict, summary and tick.
	Verdict  *Verdict  `json:"verdict,omitempty"`
	Verdicts []Verdict `json:"verdicts,omitempty"`
	Metrics  *Metrics  `json:"metrics,omitempty"`
}

// Header is the first event of every file of a record.
type Header struct {
	V      int       `json:"v"`      // SchemaVersion
	Schema string    `json:"schema"` // "mcpstdio-proxy-record"
	Part   int       `json:"part"`   // 0 for the first file; rotation numbers the next ones
	Start  time.Time `json:"start"`  // wall clock at T=0
	// TimeUnit is the unit of every time in the record (T, T0, WT,
	// Since, Dur, After, and the metrics' *_us): "us", microseconds, on
	// the monotonic clock from Start.
	TimeUnit string   `json:"time_unit"`
	Proxy    string   `json:"proxy"` // the proxy's version
	Go       string   `json:"go"`    // Go runtime version
	OS       string   `json:"os"`
	Arch     string   `json:"arch"`
	PID      int      `json:"pid"`  // the proxy's process id
	Argv     []string `json:"argv"` // the server command, secret-looking values "[redacted]"
	// ArgvRedacted is how many values of Argv were redacted (flags and
	// KEY=value words whose name looks secret).
	ArgvRedacted int       `json:"argv_redacted,omitempty"`
	Dir          string    `json:"dir,omitempty"`   // the server's working directory ("" = the proxy's)
	Cwd          string    `json:"cwd,omitempty"`   // the proxy's working directory
	EnvKeys      []string  `json:"env"`             // names of the server's environment variables (never values)
	Pipes        PipeSizes `json:"pipes"`           // kernel pipe capacities, 0 where unknown
	Chunk        int       `json:"chunk"`           // ChunkSize
	Head         int       `json:"head"`            // HeadBytes
	Parse        int       `json:"parse"`           // ParseLimit
	Bodies       bool      `json:"bodies"`          // chunk events carry data
	Redact       []string  `json:"redact"`          // JSON paths redacted
	Keys         []string  `json:"keys"`            // secret-looking key words redacted
	Faults       []Fault   `json:"faults,omitzero"` // faults configured
}

// PipeSizes are the capacities of the kernel pipes on each side, in bytes
// (Linux; 0 elsewhere or when a side is not a pipe).
type PipeSizes struct {
	ServerStdin  int `json:"server_stdin"`
	ServerStdout int `json:"server_stdout"`
	ServerStderr int `json:"server_stderr"`
	HostStdin    int `json:"host_stdin"`
	HostStdout   int `json:"host_stdout"`
	HostStderr   int `json:"host_stderr"`
}

// TimeUnit is Header.TimeUnit: microseconds.
const TimeUnit = "us"

// SchemaName is Header.Schema.
const SchemaName = "mcpstdio-proxy-record"

// Kinds of frames (Event.Kind).
const (
	KindRequest      = "request"
	KindNotification = "notification"
	KindResponse     = "response"
	KindError        = "error" // an error response
	KindJunk         = "junk"  // not JSON-RPC
)

// Redacted is what a redacted value becomes in a record: a JSON string,
// so that a redacted frame stays valid JSON.
const Redacted = `"[redacted]"`

// ChunkBytes returns a chunk event's bytes (Data or B64), nil if the record
// did not keep them.
func (e *Event) ChunkBytes() []byte {
	if e.B64 != nil {
		return e.B64
	}
	if e.Data != "" {
		return []byte(e.Data)
	}
	return nil
}
