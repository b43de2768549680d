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
// Targets are a child process (Command, Exec, GoBuild), a goroutine on
// the same kind of pipes (InProcess), or the test binary re-executed as a
// child (Helper, RegisterHelper, Main). One goroutine reads the server's
// stdout for the whole life of the server and never waits on the test; what
// the host keeps of the server's output is bounded (Limits), never its
// traffic, so a flooding server cannot exhaust the test's memory.
//
// Every wait is bounded by its context, the session timeout and, under
// StartServer, the test deadline; a failed wait returns a *WaitError saying
// which side looks stuck, with the evidence (WaitWriterBlocked's wraps it
// in a *NotBlockedError saying what the stdout pipe did meanwhile). Close
// escalates from closing stdin to SIGTERM, SIGQUIT and SIGKILL and reports
// what it could not end. Linux gives the most evidence (pipe capacity and
// fill level, /proc thread states, pipe holders); elsewhere
// WithPipeCapacity fails with errors.ErrUnsupported and WaitWriterBlocked
// has no evidence to find. To replay a session recorded by mcpstdio proxy,
// see package replay.
package mcptest
