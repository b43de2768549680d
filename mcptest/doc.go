// Package mcptest is a test host for MCP servers on stdio that makes
// back-pressure bugs reproducible: it starts a server on real kernel pipes,
// lets a test stop reading the server's stdout at the read(2) level, shows
// when the server is blocked in write, cancels, and measures.
//
//	s := mcptest.StartServer(t, mcptest.Command("./myserver", "--stdio"),
//		mcptest.WithPipeCapacity(16<<10), mcptest.WithMaxFrame(1<<20))
//	big := s.Send("tools/call", params) // returns at once
//	s.StallReads()                       // the host stops reading stdout
//	if err := s.WaitWriterBlocked(ctx); err != nil { … } // the server is blocked in write()
//	big.Cancel("over budget")            // notifications/cancelled
//	s.ResumeReads()
//	if err := s.Ping(ctx); err != nil { … } // the session recovered
//
// # Targets
//
// Command and Exec run a child process; GoBuild builds a main package once
// per test binary and runs it; InProcess runs a ServeFunc in a goroutine, on
// the same kind of pipes; Helper re-executes the test binary as a child
// serving a ServeFunc registered with RegisterHelper, for which the
// package's TestMain calls Main:
//
//	func init() { mcptest.RegisterHelper("naive", naiveServer) }
//	func TestMain(m *testing.M) { mcptest.Main(m) } // helpers + goleak
//
// Children run in their own process group (Unix), so that signals from
// Close also reach what they start.
//
// # The host
//
// One goroutine reads the server's stdout for the whole life of the server:
// valve (StallReads) → framer with the transport limit (WithMaxFrame) →
// dispatch. It parses each frame, routes a response to its Pending, counts
// and keeps a notification, and queues a server-to-host request for a
// goroutine of its own that runs the WithServerRequests handler and writes
// the answer. Frames over the limit are never parsed: a scanner follows each
// line's JSON structure in constant memory to find its top-level "id", so an
// oversized response fails its own request with a *pipes.FrameTooLargeError,
// wherever the "id" is in the frame. Lines that are not JSON-RPC are counted
// and kept, bounded, and the session goes on. Stderr is drained into a
// bounded capture on a third goroutine.
//
// The reader waits for nothing but the kernel and its own CPU work: it
// never runs test code (a handler, a WithStderr writer), never waits for a
// test to consume notifications, and never writes to the server's stdin,
// which a server that does not read it could block. It does dispatch each
// message itself rather than hand it to a dispatcher through a queue: the
// work is parsing, which bounds any host's speed anyway, and with no queue
// between reading and dispatching there is no queue to fill, so no burst a
// live server writes — junk at start-up, a response followed by thousands
// of notifications, a progress flood — can make the host drop a message or
// end the session. The time stdout goes unread while the reader works is
// measured (Stats.ReaderBusyTime).
//
// # Bounds
//
// What the host keeps is bounded in count and in bytes (see Limits and its
// defaults): notifications for WaitNotification (a long one is kept as its
// head and size), junk lines, the transcript, server requests waiting for
// the handler. Beyond a bound the oldest go first, counted in Stats and named
// in Diagnose; a response is never dropped. So the host's heap is
// O(WithMaxFrame + the keep budgets) whatever the server writes.
// Limits.OverflowEndSession turns a reached bound into the end of the
// session, for a test that asserts a server does not flood its host.
//
// # Protocol eras
//
// By default Start negotiates as the 2026-07-28 stdio backward-compatibility
// rule says: a server/discover probe with the modern _meta, then, for a
// legacy server, initialize offering 2025-11-25. In the modern era every
// request carries the _meta fields.
//
// # Replaying a recorded session
//
// ReplayHost (and Replay) turn a session recorded by mcpstdio proxy into a
// test: the recorded host's requests, notifications and cancels, in its
// chunks and with its stalls of stdout, played against a server under test
// on a session of its own, and a replay.Report of where the server departs
// from the recorded one (see package replay):
//
//	mcptest.ReplayHost(t, mcptest.Command("./myserver"), "testdata/hang.ndjson")
//
// # Lifecycle and diagnosis
//
// Every wait is bounded by its context, the session timeout (WithTimeout) and,
// under StartServer, the test deadline. A failed wait returns a *WaitError
// whose Diagnosis says which side looks stuck and shows the evidence: pipe
// fill levels, stalled reads, the last frame, whether the server is alive,
// (Linux) what its threads wait in, the transcript tail, junk, the stderr
// tail and, for in-process servers, their goroutines. A server that exits
// while a process it started holds its stdout open fails pending requests
// within the grace period, naming the holder (Linux). Close escalates from
// closing stdin to SIGTERM, SIGQUIT and SIGKILL, and reports what it could
// not end; after Close, every operation fails at once with an error
// wrapping ErrClosed. A panic in an in-process server or a server-request
// handler is recovered and reported with its stack.
//
// Linux gives the most evidence (pipe capacity and fill level, /proc thread
// states, pipe holders); elsewhere WithPipeCapacity fails with
// errors.ErrUnsupported and WaitWriterBlocked has no evidence to find.
package mcptest
