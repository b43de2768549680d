// Package replay turns a session recorded by mcpstdio proxy into a
// regression test: it reads the proxy's record into a Record — the frames
// each side sent, how the bytes were cut into chunks, the stalls, the
// cancels, the proxy's faults, with their times — and plays either side of
// it again.
//
//   - Host (TestServer in a test, `mcpstdio replay -- <server command>`)
//     plays the recorded host against a server under test, on an mcptest
//     session: the same requests, notifications and cancels in the same
//     chunks and order, the host's reads stopped where the recorded host
//     (or the proxy's stop fault) stopped them. It judges the server by the
//     rules the release criteria use — reads while its stdout is blocked,
//     stops cancelled work, answers every request not cancelled — so that a
//     hang record fails on the server that hung and passes on the fixed
//     one; Same compares each message with the recorded one instead.
//
//   - Serve (`mcpstdio replay -serve`) plays the recorded server for a host
//     under test: the recorded responses and pacing, answering the host's
//     requests by order under its own ids, and reports where the host
//     departs from the recorded one.
//
//     replay.TestServer(t, mcptest.Command("./myserver"), "testdata/hang.ndjson")
//
// Both players share one scheduler: by default each action comes as soon as
// what it depended on in the record has happened (the messages the recorded
// side had received before acting); Timed also keeps the recorded gaps.
// Report gives the rules' findings (Finding; or, under Same and for Serve,
// the departures: Missing, Extra, Different, StallNotBlocking, and
// Unchecked where the record has only a message's head, a record made
// without -log-bodies), what was done with each recorded stall
// (Report.Stalls) and what was not played (Report.Unplayed); Strict fails
// on what was not played, judged or checked. Redact hashes or drops fields
// by JSON path at load and save (Record.Write), so that a redacted record
// can be committed as test data.
package replay
