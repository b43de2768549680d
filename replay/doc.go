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
// Both players share one scheduler: by default each action comes as soon as
// what it depended on in the record has happened (the messages the recorded
// side had received before acting); Timed also keeps the recorded gaps.
// Messages are compared as decoded JSON with go-cmp (Ignore, CmpOptions);
// departures are Missing, Extra, Different, StallNotBlocking, and Unchecked
// where the record has only a message's head (a record made without
// -log-bodies). Report.Stalls says what was done with each recorded stall,
// and Strict fails on what was not checked. Redact hashes or drops fields
// by JSON path at load and save (Record.Write), so that a redacted record
// can be committed as test data.
package replay
