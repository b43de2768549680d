// Package proxy is a faithful stdio man-in-the-middle for MCP servers: it
// runs a server command with its stdin, stdout and stderr on kernel pipes,
// forwards every byte exactly to and from a host's streams, and observes
// what passes, so that when a session "hangs" in the field the record says
// who stopped reading, who never answered, and which cancel went unheeded
// (`mcpstdio proxy -- <server command…>` is this package as a command).
//
// Each direction is one goroutine that reads at most Config.ChunkSize
// bytes and writes them all on before it reads again (on Linux, bulk
// between two pipes goes by splice(2) and is held by no one, the
// observer's copy taken by tee(2)):
// nothing is parsed, reordered or dropped (faults aside), and the proxy adds
// at most one chunk plus one kernel pipe of buffering per direction. One
// observer goroutine gets copies without ever making the traffic wait;
// when it falls behind it loses detail, never bytes, and says so. It keeps
// the pending requests and finds verdicts (record.Verdict) from what it
// saw, including the proxy's own faults (Config.Faults).
//
// The record (Config.Record) is package record's format, written by one
// goroutine in the order things happened; Config.OnStatus gets the live
// Status. Neither can stop the traffic: a failure to write is recorded or
// returned by Wait, and the proxy goes on forwarding.
//
// A proxy always ends: once the server has exited, its output gets
// ExitGrace to end and be delivered, then every blocked read and write is
// interrupted, and the record gets ExitGrace more (see Proxy.Wait). Its
// own faults never keep the server from ending: they hold it no longer
// than the session (see Config.Faults). Close and Wait are safe to call
// from any goroutines, any number of times.
//
// It imports only the standard library, golang.org/x/sys and this module's
// pipes, record, wire and internal packages, and never testing: it runs in
// a user's live agent.
package proxy
