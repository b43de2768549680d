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
// A verdict says only what was observed: "stopped", "blocked" and
// "survived" come with their evidence, numbers are taken when they are
// seen, and without evidence a verdict says "unverified"; slow is not
// stopped, and a bound the harness ran out of is never the server's fault.
// Warn is for SHOULD-level rules, named with their spec revision, and for
// what could not be verified. Expect (in ServerConfig and HostConfig) names
// the verdicts a server or host is known to get, so that a known failure
// does not keep a CI red and a fixed one is noticed.
//
// Result.Evidence carries no package prefix; Result.Err and Report.Err
// prefix it with the criterion's name.
package assertions
