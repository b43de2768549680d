package record

import "encoding/json"

// Verdict is one finding about who waits on whom, in plain words, with the
// evidence in the text. A verdict says only what the proxy observed.
type Verdict struct {
	// Kind names the finding: see the Verdict* constants.
	Kind string `json:"kind"`
	// ID is the request it is about, if any.
	ID json.RawMessage `json:"id,omitempty"`
	// Text says it in words, e.g. "host is not reading the server's
	// output: …".
	Text string `json:"text"`
}

// Kinds of verdicts.
const (
	VerdictHostNotReading   = "host-not-reading"   // the proxy's write to the host's stdout is blocked
	VerdictServerNotReading = "server-not-reading" // the proxy's write to the server's stdin is blocked
	VerdictStderrBlocked    = "stderr-blocked"     // the proxy's write to the host's stderr is blocked
	VerdictUnanswered       = "unanswered"         // a request has waited Unanswered for its response
	VerdictCancelIgnored    = "cancel-ignored"     // progress or a response came after a cancel was forwarded
	VerdictNoToolCall       = "no-tool-call"       // the host never sent tools/call
	VerdictIdle             = "idle"               // every response was delivered; the host has sent nothing since
	VerdictUnknownResponse  = "unknown-response"   // responses to ids the host never sent (or already answered)
	VerdictJunk             = "stdout-junk"        // lines on the server's stdout that are not JSON-RPC
	VerdictExited           = "exited"             // the server ended with requests unanswered
	VerdictNoExit           = "no-exit"            // the host closed stdin and the server did not end
	VerdictBlockedEarlier   = "blocked-earlier"    // a direction was blocked for Stuck or longer during the session
	VerdictDropped          = "observer-dropped"   // the observer lost detail
	VerdictFaultHolding     = "fault-holding"      // a fault of the proxy's own holds a direction's bytes
)

// Metrics are the per-session counters a host should keep for each server
// session (bytes each way, the largest frame, parse errors, cancels, time
// spent blocked, terminations), and the proxy's own. Bytes are bytes on the
// wire; times are microseconds.
type Metrics struct {
	StdinBytes       int64           `json:"stdin_bytes"`  // read from the host, for the server's stdin
	StdoutBytes      int64           `json:"stdout_bytes"` // read from the server's stdout
	StderrBytes      int64           `json:"stderr_bytes"` // read from the server's stderr
	StdinFrames      int64           `json:"stdin_frames"`
	StdoutFrames     int64           `json:"stdout_frames"`
	LargestFrame     int64           `json:"largest_frame"`   // on the server's stdout
	LargestRequest   int64           `json:"largest_request"` // on the server's stdin
	ParseErrors      int64           `json:"parse_errors"`    // server stdout lines (within the parse limit) that are not JSON-RPC
	FirstJunk        string          `json:"first_junk,omitempty"`
	HostParseErrors  int64           `json:"host_parse_errors"` // the same on the host's side
	Unterminated     int64           `json:"unterminated"`      // lines cut off by the end of a stream
	Requests         int64           `json:"requests"`          // from the host
	Responses        int64           `json:"responses"`         // from the server
	Notifications    int64           `json:"notifications"`     // from the server
	ServerRequests   int64           `json:"server_requests"`   // requests from the server to the host
	Cancels          int64           `json:"cancels"`           // notifications/cancelled, either way
	LateResponses    int64           `json:"late_responses"`    // responses that began after their cancel was forwarded
	UnknownResponses int64           `json:"unknown_responses"` // server responses to no pending request of the host's
	FirstUnknown     json.RawMessage `json:"first_unknown,omitempty"`
	// HostUnknownResponses counts the host's responses to no pending
	// request of the server's.
	HostUnknownResponses int64           `json:"host_unknown_responses,omitempty"`
	FirstHostUnknown     json.RawMessage `json:"first_host_unknown,omitempty"`
	BlockedInUS          int64           `json:"blocked_in_us"`  // time writes to the server's stdin were blocked (each ≥ BlockEvent)
	BlockedOutUS         int64           `json:"blocked_out_us"` // the same for the host's stdout
	BlockedErrUS         int64           `json:"blocked_err_us"` // the same for the host's stderr
	// HeldInUS, HeldOutUS and HeldErrUS are the time a fault of the
	// proxy's own kept it from reading each direction's source (a stop, or
	// a latency, slice or bandwidth fault pacing a chunk, its writes
	// included): time the writer was held by the proxy, not by the other
	// side.
	HeldInUS      int64 `json:"held_in_us,omitempty"`
	HeldOutUS     int64 `json:"held_out_us,omitempty"`
	HeldErrUS     int64 `json:"held_err_us,omitempty"`
	Terminations  int   `json:"terminations"`         // 1 once the server has ended
	DroppedBytes  int64 `json:"dropped_bytes"`        // bytes the observer did not see (all were forwarded)
	DroppedEvents int64 `json:"dropped_events"`       // observer events lost
	GapFrames     int64 `json:"gap_frames,omitempty"` // frames the observer saw only part of: a replay cannot check them
	Forgotten     int64 `json:"forgotten"`            // pending entries evicted by MaxPending
}
