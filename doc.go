// Package mcpstdio is the root of a test-helper library that makes MCP
// stdio back-pressure bugs reproducible, and impossible to ship again.
//
// An MCP stdio session is two bounded kernel pipes. If a host stops reading
// the server's stdout, the server blocks in write() in the middle of a large
// response and, if its stdin reader shares that goroutine or lock, can no
// longer read notifications/cancelled or the next request. The packages
// below prove, with real pipes and real processes, that a server or a host
// does not fall into that trap, and show what a live session did:
//
//   - [github.com/mcpstdio/mcpstdio/pipes]: kernel pipes, a read valve that
//     stalls at the read(2) level, a bounded framer, a draining capture.
//   - [github.com/mcpstdio/mcpstdio/wire]: the JSON-RPC and MCP stdio
//     vocabulary: messages, parsing, codes, methods, _meta keys, versions,
//     and a constant-memory scanner of a frame's id and method.
//   - [github.com/mcpstdio/mcpstdio/record]: the format of the proxy's
//     record: events, directions, frame kinds, verdicts, metrics, Read.
//   - [github.com/mcpstdio/mcpstdio/mcptest]: the test host: start a server,
//     stall its stdout, cancel, count, diagnose.
//   - [github.com/mcpstdio/mcpstdio/fakeserver]: an MCP server that
//     misbehaves on demand, for testing hosts.
//   - [github.com/mcpstdio/mcpstdio/cancelrule]: whether a server stopped
//     the work of a request it was told to cancel, judged by what shows the
//     work (progress, CPU demand, the processes it started).
//   - [github.com/mcpstdio/mcpstdio/assertions]: the release criteria as
//     checks and batteries (ServerCriteria, HostCriteria).
//   - [github.com/mcpstdio/mcpstdio/proxy]: a faithful stdio
//     man-in-the-middle that forwards every byte and records what passes,
//     for sessions that hang in the field.
//   - [github.com/mcpstdio/mcpstdio/replay]: a recorded session played
//     again, either side, as a regression test.
//
// The command github.com/mcpstdio/mcpstdio/cmd/mcpstdio runs the server
// criteria against any stdio MCP server from a shell, or against every
// server of an agent's config file (probe), the host criteria against a
// host command in any language (hostprobe), the fake server (fake), the
// proxy and what it sees (proxy, status, show), replays (replay), and puts
// the proxy in front of an agent's servers and takes it out (wrap,
// unwrap); it is also on npm (npx mcpstdio).
// github.com/mcpstdio/mcpstdio/cmd/mcpstdio-proxy is its proxy alone, for
// less memory in a host's MCP configuration.
package mcpstdio
