// Package proxy is a faithful stdio man-in-the-middle for MCP servers: it
// runs a server command with its stdin, stdout and stderr on kernel pipes,
// forwards every byte exactly to and from a host's streams, and observes
// what passes, so that when a session "hangs" in the field the record says
// who stopped reading, who never answered, and which cancel went unheeded.
// `mcpstdio proxy -- <server command…>` is this package behind a command
// line.
//
// It imports only the standard library, golang.org/x/sys and this
// module's pipes and wire packages, and never testing: it runs inside a
// user's live agent.
//
// # Forwarding
//
// Each direction (host → server stdin, server stdout → host, server
// stderr → host) is one goroutine that reads at most Config.ChunkSize
// bytes, writes them all to the destination, and only then reads again.
// Nothing is parsed, rewritten, reordered or dropped on that path (faults
// aside), non-JSON lines included. The directions share no lock and never
// wait for the observer. An end passes on as an end: EOF on a source
// closes its destination, and a write that fails because the reader went
// away (EPIPE) closes the source, so each side sees what it would have
// seen without the proxy.
//
// The exact extra buffering the proxy adds per direction is one kernel
// pipe (between the proxy and the server; its capacity is in the record's
// header and can be set with Config.PipeCapacity on Linux) plus at most
// one chunk (ChunkSize bytes) held in a write. So a host that stops
// reading blocks the server once the server has written what the host's
// pipe holds, plus ChunkSize, plus the server's pipe. With 16 KiB pipes and
// chunks, that is 48 KiB: the tests check it byte for byte.
//
// # The observer
//
// The forwarding goroutine hands a copy of each chunk to one observer
// goroutine through a buffered channel, without waiting: copies come from
// a pool of at most Config.ObserverBuffer bytes per direction (allocated
// only as the observer falls behind). When the pool or the channel is
// full, the observer loses detail, counts it, records a record.EvDrop event and
// a gap, and the traffic goes on at full speed.
//
// The observer follows lines in memory bounded by ParseLimit + HeadBytes
// whatever their length: each line is redacted and hashed as it streams,
// its head kept, and, if it is within ParseLimit, parsed with
// wire.ParseMessage; a longer line is scanned with wire.Scanner for its
// top-level id and method. From this it keeps a pending table (each
// request with when it was read, written to the server, when its response
// began and ended and was delivered, its progress and cancel) and the
// per-direction blocked writes, and finds verdicts (see record.Verdict) such as
// "host is not reading the server's output: the response to id 7
// (tools/call search), 2.3 MiB of it read from the server so far, is
// waiting for 4m12s".
//
// # The record
//
// The record is NDJSON: one record.Event per line, written with one write(2) as
// it happens (a killed proxy leaves a readable record). The first line is
// a header (record.EvHeader) with the schema version, the server's argv, the
// names (never the values) of its environment variables, the platform and
// the pipe sizes. Then: spawn; a chunk event for every read of every
// direction with when it was read and when its write returned (replay
// uses them for chunk boundaries and stalls); a frame event per line with
// its offset, size, id, method, kind, head and hash; block and unblock
// events for writes that took BlockEvent or longer; cancel and late
// events; eof, close, signal, exit; fault; drop; verdict; and a summary
// with the metrics at the end. Bodies are kept as head, length and hash
// unless Config.LogBodies asks for every byte. Redaction (JSON paths, and
// keys that look secret) applies before anything is written, heads,
// hashes and bodies alike. record.Read reads a record; record/testdata/sample.ndjson
// pins the format.
//
// LogFile writes a record to a file created 0600 (its directory 0700),
// with a size cap and rotation; DefaultDir is the per-user state
// directory (never the working directory).
//
// # Platforms
//
// Forwarding, the observer, verdicts, the record, the status file and all
// faults but sigstop use only portable APIs: the proxy knows its own write
// is blocked because it is still in it. On Linux it adds evidence (pipe
// fill levels with FIONREAD, settable pipe capacity) and kills the server
// if the proxy dies (Pdeathsig). On Unix the server runs in its own
// process group, SIGINT, SIGTERM and SIGHUP given to Proxy.Signal reach
// the server's pid, and a server killed by signal n makes the exit status
// 128+n. On Windows there is no SIGTERM: Proxy.Signal can only kill
// (os.Kill), a console's Ctrl-C reaches the server directly, and the exit
// status is the server's exit code. This package is tested on Linux only.
package proxy
