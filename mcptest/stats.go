package mcptest

import (
	"time"
)

// Stats are a session's counters: the metrics a host should keep for each
// server session (bytes read from stdout, the largest frame, parse errors,
// time stdout went unread, cancels sent, how the process ended), and what
// the host's bounds dropped. All sizes are bytes on the wire. Every frame
// read from stdout is counted in exactly one of Responses, UnknownIDs,
// Notifications, ServerRequests, ParseErrors, JunkLines and Batches; every
// item a bound of Limits dropped is counted in the field named for it.
type Stats struct {
	StdoutBytes     int64 // bytes read from the server's stdout
	Frames          int64 // complete frames within the limit
	LargestFrame    int64 // longest complete frame within the limit
	OversizedFrames int64 // frames over the transport limit, discarded unparsed
	DiscardedBytes  int64 // bytes of oversized and truncated frames
	ParseErrors     int64 // frames that look like JSON but are not JSON-RPC (duplicate envelope keys among them)
	JunkLines       int64 // frames that are not JSON at all (banners, logs)
	Batches         int64 // JSON-RPC batches: a protocol violation, never routed

	Responses     int64 // responses routed to their request
	LateResponses int64 // responses that arrived after Cancel (included in Responses)
	UnknownIDs    int64 // responses to no pending request

	Notifications        int64 // notifications received, every one, kept or not
	NotificationsDropped int64 // kept notifications dropped, oldest first, beyond Limits.Notifications or NotificationBytes
	NotificationsCut     int64 // notifications kept as head and size, being longer than Limits.NotificationHead
	JunkDropped          int64 // junk heads dropped beyond Limits.Junk (all junk is counted in JunkLines or ParseErrors)
	TranscriptDropped    int64 // transcript entries dropped beyond Limits.Transcript

	ServerRequests        int64 // requests from the server (echoes of the host's own requests included)
	ServerRequestsDropped int64 // server requests dropped unanswered: the handler's queue was full (Limits.ServerRequests)
	ProtocolViolations    int64 // server requests in the modern era, batches, duplicate envelope keys

	// ReaderBusyTime is the time stdout went unread while the host was
	// busy: from each read(2) returning to the next. The stdout reader
	// dispatches each message itself and never waits for anything but its
	// own CPU work, so this is also the time a host with a dispatcher queue
	// would have spent waiting for room in it.
	ReaderBusyTime time.Duration
	// StdoutFullTime is the time the stdout pipe spent effectively full
	// (pipes.EffectivelyFull) while reads were stalled.
	StdoutFullTime time.Duration

	Requests         int64 // requests sent
	CancelsSent      int64 // notifications/cancelled sent
	StdinBytes       int64 // bytes written to the server's stdin
	StderrBytes      int64 // bytes the server wrote to stderr
	StderrTeeDropped int64 // stderr bytes not given to the WithStderr writer because it was slow

	Exit           Exit // how the server ended; Exit.How is empty while it runs
	WriterEvidence WriterEvidence
}

// Stats returns a snapshot of the session's counters. It does not wait on
// the server; the frame counts agree with what dispatch has handled.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	// The framer's counts under s.mu, which the reader holds while it
	// dispatches a frame: the framer counted it when Next returned it, so
	// the two agree.
	fs := s.framer.Stats()
	st := s.stats
	// Not kept in s.stats: a frame costs a store and a load less.
	st.TranscriptDropped, st.NotificationsDropped = s.transcript.dropped, s.notifications.dropped
	st.WriterEvidence = s.evidence
	if !s.pipeFullAt.IsZero() {
		st.StdoutFullTime += time.Since(s.pipeFullAt)
	}
	s.mu.Unlock()
	st.StdoutBytes = s.valve.BytesRead()
	st.Frames = fs.Frames
	st.LargestFrame = fs.Largest
	st.OversizedFrames = fs.Oversized
	st.DiscardedBytes = fs.Discarded
	st.ReaderBusyTime = time.Duration(s.in.busy.Load())
	st.StderrBytes = s.stderrCap.Total()
	st.Exit = s.proc.exit()
	return st
}

// Stderr returns what the server has written to stderr so far, bounded:
// the first and the last 32 KiB, with a marker where bytes were dropped
// between them (Stats.StderrBytes counts them all). The session drains
// stderr for the whole life of the server, so a noisy server never blocks
// on it; WithStderr tees it as it comes.
func (s *Session) Stderr() []byte { return []byte(s.stderrCap.String()) }

// alive reports whether the server is still running (Stats().Exit.How is
// empty).
func (s *Session) alive() bool { return !isClosed(s.proc.done()) }

// PID returns the server's process id, or 0 for an in-process server. It
// does not change when the server exits, but the kernel may then give the
// id to another process: read /proc with it only while Stats().Exit.How is
// empty.
func (s *Session) PID() int { return s.proc.pid() }
