// Package replay turns a session recorded by mcpstdio proxy into a
// regression test: it reads the proxy's record (NDJSON, record.Event) into
// a Record — the frames each side sent, how the bytes were cut into
// chunks, the stalls, the cancels, all with their times — and plays either
// side of it again.
//
//   - The host side, against a server under test, is mcptest.Replay and
//     mcptest.ReplayHost (and `mcpstdio replay -- <server command>`): the
//     same requests, notifications and cancels in the same order and the
//     same chunks, the host's reads stopped where the recorded host stopped
//     them, and a Report of where the server departs from the recorded one.
//   - The server side, for a host under test, is Serve (and `mcpstdio
//     replay -serve`): the recorded responses, notifications and pacing,
//     answering the host's requests by order with its own ids.
//
// A replay is causal by default: each action comes as soon as what it
// depended on in the record has happened (the messages the recorded side
// had received before acting); Timed also keeps the recorded gaps, scaled
// and capped. Messages are matched to the record by order (a response by
// its request), compared as decoded JSON with go-cmp (Ignore, CmpOptions),
// and every departure is reported with its kind, where it happened and a
// diff: Missing, Extra, Different, StallNotBlocking, and Unchecked where
// the record has only a message's head (a record made without
// -log-bodies keeps each frame's first bytes, its length and its hash).
//
// Records hold what agents send their tools. Redact hashes or drops
// fields by JSON path when a record is loaded and again when it is saved
// (Record.Write), so that a redacted record can be committed as test data:
//
//	rec, err := replay.Load("hang.ndjson", replay.Redact("params.arguments.query", "-params._meta"))
//	…
//	err = rec.Write(f) // testdata/hang.ndjson
//
// This package never imports testing; mcptest does the host side on its
// test host.
package replay
