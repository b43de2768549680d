// Package mcptest is a test host for MCP servers on stdio that makes
// back-pressure bugs reproducible: it starts a server on real kernel pipes,
// lets a test stop reading the server's stdout at the read(2) level, shows
// when the server is blocked in write, cancels, and measures.
//
//	s := mcptest.StartServer(t, mcptest.Command("./myserver", "--stdio"),
//		mcptest.WithPipeCapacity(4096), mcptest.WithMaxFrame(1<<20))
//	big := s.Send("tools/call", params) // returns at once
//	s.StallReads()                       // the host stops reading stdout
//	if err := s.WaitWriterBlocked(ctx); err != nil { … } // the server is blocked in write()
//	big.Cancel("over budget")            // notifications/cancelled
//	s.ResumeReads()
//	if err := s.Ping(ctx); err != nil { … } // the session recovered
//
// # Targets
//
// Command and Exec run a child process; InProcess runs a ServeFunc in a
// goroutine, on the same kind of pipes; Helper re-executes the test binary
// as a child serving a ServeFunc registered with RegisterHelper, for which
// the package's TestMain calls Main:
//
//	func init() { mcptest.RegisterHelper("naive", naiveServer) }
//	func TestMain(m *testing.M) { mcptest.Main(m) } // helpers + goleak
//
// Children run in their own process group (Unix), so that signals from
// Close also reach what they start.
//
// # The host
//
// One goroutine reads the server's stdout for the whole life of the server
// and never waits for anything but the kernel: valve (StallReads) → framer
// with the transport limit (WithMaxFrame) → a bounded queue (WithQueue) →
// a dispatcher goroutine that routes responses to their Pending, keeps
// notifications and answers server requests (WithServerRequests). Frames
// over the limit are never parsed: a scanner follows each line's JSON
// structure in constant memory to find its top-level "id", so an oversized
// response fails its own request with a *pipes.FrameTooLargeError, wherever
// the "id" is in the frame. Lines that are not JSON-RPC are counted and kept
// (Junk), and the session goes on. Stderr is drained into a bounded capture.
//
// # Protocol eras
//
// By default Start negotiates as the 2026-07-28 stdio backward-compatibility
// rule says: a server/discover probe with the modern _meta, then, for a
// legacy server, initialize offering 2025-11-25 (see Session.Handshake).
// In the modern era every request carries the _meta fields.
//
// # Bounds and diagnosis
//
// Every wait is bounded by its context, the session timeout (WithTimeout) and,
// under StartServer, the test deadline. A failed wait returns a *WaitError
// whose Diagnosis says which side looks stuck and shows the evidence: pipe
// fill levels, stalled reads, the last frame, whether the server is alive,
// (Linux) what its threads wait in, the transcript tail, the stderr tail and,
// for in-process servers, their goroutines. Close escalates from closing
// stdin to SIGTERM, SIGQUIT and SIGKILL, and reports what it could not end.
//
// Linux gives the most evidence (pipe capacity and fill level, /proc thread
// states); elsewhere WithPipeCapacity fails with errors.ErrUnsupported and
// WaitWriterBlocked has no evidence to find.
package mcptest
