package assertions

import "runtime/debug"

// The rules the criteria check, as the verdicts quote them.
const (
	ruleStdoutClean    = "stdio: the server MUST NOT write anything to its stdout that is not a valid MCP message"
	ruleInvalidJSON    = "JSON-RPC: an invalid message is answered with a parse error (or ignored) and the session goes on; a valid request in the same read is still handled"
	ruleOversizedInput = "a frame over the server's limit is a transport error for that frame, not the end of the session"
	ruleReadsBlocked   = "the server's stdin reader must not wait on its stdout writes (nor on a queue they hold up)"
	ruleLargeCall      = "the Large call must produce a response larger than the stdout pipe, or nothing was blocked"
	ruleCancelModern   = "2026-07-28 stdio: after notifications/cancelled the server MUST NOT send any further messages for that request, and SHOULD stop its work"
	ruleCancelLegacy   = " cancellation: receivers of notifications/cancelled SHOULD stop processing the request and SHOULD NOT send a response for it"
	ruleCancelEvidence = "a cancel is judged by what the platform shows: progress notifications, the server's CPU time and the processes it started (Linux, child servers), and responses; without evidence the verdict is unverified"
	ruleCancelAfter    = "a cancel that arrives once the response is on the wire is tolerated, and the session goes on"
	ruleShutdownEOF    = "stdio: servers SHOULD exit promptly when their standard input is closed"
	ruleShutdownTERM   = "stdio: a client force-terminates with SIGTERM before SIGKILL; a server SHOULD exit on it"
	ruleEraModern      = "2026-07-28 stdio: the server MUST NOT write JSON-RPC requests to stdout"
	ruleEra            = "2026-07-28 stdio backward compatibility: probe server/discover, fall back to initialize"
	ruleResultContract = "result contract: a tool bounds its content before serialization and says what was omitted and how to continue"
	ruleSecondRequest  = "after any fault the session goes on: a further request is answered"

	ruleHostLimit   = "transport limit: the host never parses a frame over its limit, and reports a bounded error for it"
	ruleHostIntact  = "a response within the host's limit arrives intact, whatever its content"
	ruleHostGoesOn  = "the host survives a misbehaving server's output and a further call succeeds"
	ruleHostCancel  = "cancellation: a host that abandons a request MUST send notifications/cancelled so the work stops"
	ruleHostReads   = "the host reads the server's stdout for the whole life of the server, whatever it is doing"
	ruleHostEra     = "2026-07-28 stdio backward compatibility: a host speaks to legacy-only and modern-only servers"
	ruleHostAdapter = "a HostFactory returns a usable Host or an error, and a Host's methods return"
)

// cancelRule is the rule for work or messages after a cancel in era; with
// no era negotiated, the latest one's.
func cancelRule(era string) string {
	if era == "" || isModernEra(era) {
		return ruleCancelModern
	}
	return era + ruleCancelLegacy
}

func stack() string { return string(debug.Stack()) }
