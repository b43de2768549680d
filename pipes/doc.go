// Package pipes moves bytes between processes the way the kernel really
// does, so that back-pressure in a test is real and measurable.
//
// It knows nothing of MCP or JSON-RPC. It provides:
//
//   - [Pipe]: a real kernel pipe (os.Pipe) whose capacity can be set and
//     whose fill level can be read, so a test can see that a writer is
//     blocked because the pipe is full.
//   - [Valve]: a reader that can be stalled at the read(2) level, so the
//     kernel pipe behind it genuinely fills up.
//   - [Framer]: newline-delimited frames with a byte limit, in bounded
//     memory whatever arrives.
//   - [Capture]: a writer that never blocks and never fails, keeping the
//     head and tail of what it was given.
//
// All sizes and counters are bytes on the wire.
package pipes
