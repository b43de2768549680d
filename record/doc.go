// Package record is the format of the proxy's record: NDJSON, one Event per
// line, written by package proxy as things happen and read by package
// replay and `mcpstdio replay`. It holds the format only (the event kinds,
// directions, frame kinds, verdicts, metrics and recorded faults) and
// imports only the standard library and pipes (whose Framer reads the
// lines, bounded).
//
// The first line of every file is a header (EvHeader) with the schema
// version, the server's argv, the names (never the values) of its
// environment variables, the platform and the pipe sizes. Then come spawn;
// a chunk event for every read of every direction, with when it was read
// and when its write returned; a frame event per line with its offset,
// size, id, method, kind, head and hash; block and unblock; cancel and
// late; eof, close, signal, exit; fault; drop; verdict; a tick with the
// metrics so far after a quiet spell; and a summary with the metrics at
// the end, or, if writing the record failed, a cut that says why it ends
// early. A record with neither was cut short by a kill: its last event (a
// tick at worst) says when, to a second while anything was pending. Times
// are microseconds since the session started, on the monotonic clock.
//
// Read reads a record; Files lists the files of a rotated one. A record of
// a real session, kept with the package's tests, pins the format: a field
// that changes meaning or disappears changes SchemaVersion.
package record
