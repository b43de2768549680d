// Package assertions holds the release criteria of MCP stdio servers and
// hosts as code: each server criterion is a Check… function that returns a
// Result (usable outside tests, as the mcpstdio command does) and an
// Assert… wrapper that reports it through a *testing.T, and the criteria
// together are batteries in the style of fstest.TestFS and
// nettest.TestConn:
//
//   - ServerCriteria (subtests) and CheckServer (a Report) run every
//     server criterion against a fresh server started from a
//     mcptest.Target, each under a watchdog;
//   - HostCriteria and CheckHost run the host criteria against a Go Host,
//     HostCommandCriteria and CheckHostCommand the same criteria against a
//     host command in any language (mcpstdio hostprobe), each with a fresh
//     fake server (package fakeserver), as a child of the test binary,
//     whose TestMain must call mcptest.Main, unless HostCommand.Fake says.
//
// A verdict says only what was observed, with its evidence; without
// evidence it says "unverified", and slow is not stopped. Expect names the
// verdicts a server or host is known to get, so that a known failure does
// not keep a CI red and a fixed one is noticed.
package assertions
