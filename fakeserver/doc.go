// Package fakeserver is a small MCP server over stdio that misbehaves on
// demand, for testing hosts (clients) against back-pressure, oversized
// frames, junk and cancellation, and that reports what the host did.
//
// By default it is correct: its stdin read loop never waits on a stdout
// write, each request runs with its own context, a map from request id to
// running work lets notifications/cancelled reach the producer, and a write
// lock keeps frames whole. A panic on a goroutine it started (in a tool, or
// in a write to the stdout or stderr it was given) is recovered: a request
// whose handling panicked gets an internal error, Report.Panics has the
// stack, and the server goes on. It speaks both protocol eras: 2026-07-28
// (server/discover, _meta on every request, resultType, no ping) and the
// legacy initialize handshake (2025-11-25, 2025-06-18); WithEra restricts
// it to one.
//
// Tools (all offered unless WithTools says otherwise; see Tools):
//
//   - echo: returns its text at once (the "second request").
//   - big: a payload of an exact size, as one text field, many blocks or
//     structuredContent, made of ASCII, multibyte UTF-8, quotes and
//     backslashes, or escaped newlines, written in chunks; FrameSize makes
//     the whole response line exactly that many bytes (see BigArgs).
//   - slow: progress notifications at a caller-given interval.
//   - subprocess: a real child writing a given number of bytes to stdout
//     and stderr, drained through pipes.Capture; killed with its process
//     group on cancel.
//   - remote: chunks streamed from a loopback httptest.Server at a given
//     interval; the HTTP request is aborted on cancel.
//   - search: the good result contract (bounded page of 50 of 4382
//     records by default, at most 200; nextCursor, truncated,
//     totalEstimate only when known).
//
// Faults are the fields of one struct, Faults, which is an Option and, field
// by field, the flags of ParseArgs. They fire on counts (the nth message
// read, n bytes written), never on chance: junk on stdout (Banner,
// StdoutLogAfter, InvalidJSONAfter, OversizedAfter, ServerRequestAfter),
// broken frames (RawNewline, NoFinalNewline, ExitAfterBytes,
// CloseStdoutAfter), pressure (StderrNoise, IdleNotifyBytes,
// UnboundedResults), and the wrong core (NaiveLoop, IgnoreCancel,
// RespondAfterCancel, IgnoreEOF, IgnoreSIGTERM).
//
// Run it in-process with Serve (its signature is mcptest.ServeFunc), or on
// the process's stdio with ServeStdio, as `mcpstdio fake` and a test's
// helper child do; read what it saw with Server.Report, or, from a child,
// from the file named by WithReportFile (ReadReportFile).
package fakeserver
