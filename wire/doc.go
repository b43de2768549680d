// Package wire is the JSON-RPC 2.0 and MCP stdio vocabulary: messages as
// they appear on the wire, a parser that validates a frame once and slices
// its envelope without decoding large params or results, error codes,
// method names, the _meta keys of the 2026-07-28 revision and protocol
// versions, and a scanner that finds a frame's top-level "id" and "method"
// in constant memory however long the frame is.
//
// It knows messages, not sessions: the test host (mcptest), the fake server
// (fakeserver) and the field proxy build on it. It does not import testing.
//
// # Duplicate keys
//
// A frame with two top-level members of the same envelope name ("jsonrpc",
// "id", "method", "params", "result", "error") is ambiguous: JSON leaves
// duplicate keys to the reader, and implementations disagree on which one
// wins. ParseMessage rejects such a frame (the error wraps
// ErrDuplicateKey), and Scanner reports it in Envelope.DuplicateID for
// "id", so that a small frame and an oversized one (which is only scanned,
// never parsed) follow the same rule: neither is routed by either id.
package wire
