// Package replay turns a session recorded by mcpstdio proxy into a
// regression test: it reads the proxy's record into a Record — the frames
// each side sent, how the bytes were cut into chunks, the stalls, the
// cancels, with their times — and plays either side of it again, with a
// Report of where the other side departs from the record.
//
//   - Host (TestServer in a test, `mcpstdio replay -- <server command>`)
//     plays the recorded host against a server under test, on an mcptest
//     session: the same requests, notifications and cancels in the same
//     chunks and order, the host's reads stopped where the recorded host
//     stopped them.
//
//   - Serve (`mcpstdio replay -serve`) plays the recorded server for a host
//     under test: the recorded responses and pacing, answering the host's
//     requests by order under its own ids.
//
//     replay.TestServer(t, mcptest.Command("./myserver"), "testdata/hang.ndjson")
//
// Both players share one scheduler (schedule.go): each action comes once
// what it depended on in the record has happened; Timed also keeps the
// recorded gaps. Report lists the departures and what was done with each
// recorded stall; Strict fails on what was not checked. Redact hashes or
// drops fields, so that a redacted record can be committed as test data.
package replay
