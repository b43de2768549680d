// Package fakeserver is a small MCP server over stdio that misbehaves on
// demand, for testing hosts (clients) against back-pressure, oversized
// frames, junk and cancellation, and that reports what the host did.
//
// By default it is correct: its stdin read loop never waits on a stdout
// write, each request runs with its own context, a map from request id to
// running work lets notifications/cancelled reach the producer, and a write
// lock keeps frames whole. A panic on a goroutine it started is recovered:
// the request gets an internal error, Report.Panics has the stack, and the
// server goes on. It speaks both protocol eras, 2026-07-28 (server/discover,
// _meta on every request) and the legacy initialize handshake; WithEra
// restricts it to one.
//
// Its tools (echo, big, slow, subprocess, remote, search) are described by
// Tools and the Tool constants; its faults are the fields of one struct,
// Faults, which is an Option and, field by field, the flags of ParseArgs.
// Faults fire on counts (the nth message read, n bytes written), never on
// chance.
//
// Run it in-process with Serve (its signature is mcptest.ServeFunc), or on
// the process's stdio with ServeStdio, as `mcpstdio fake` and a test's
// helper child do; read what it saw with Server.Report, or, from a child,
// from the file named by WithReportFile (ReadReportFile).
package fakeserver
