package assertions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// testContext bounds a check run from a test by its deadline.
func testContext(t testing.TB) context.Context {
	ctx, cancel, _ := bound.Context(t.Context(), t)
	t.Cleanup(cancel)
	return ctx
}

// checkCheap makes the criteria's "second request": call, if given, else
// Session.Ping. An error answer to the ping counts (the server responds); an
// error answer to a configured call does not (configure one that works).
func checkCheap(ctx context.Context, s *mcptest.Session, within time.Duration, call *ToolCall) error {
	start := time.Now()
	what := pingMethod(s) // ping or server/discover, as sent
	var p *mcptest.Pending
	if call != nil {
		what = "tools/call " + call.Name
		p = s.Send(wire.MethodToolsCall, call.params(nil))
	} else {
		p = s.Send(what, nil)
	}
	resp, err := waitProgressing(ctx, s, p, within)
	if err == nil && resp.Error != nil {
		if call == nil {
			return nil // an error answer to the ping: the server responds
		}
		return fmt.Errorf("the second request (%s) was answered with an error, %v: configure a cheap call that works", what, resp.Error)
	}
	if err != nil && strings.Contains(err.Error(), slowMark) {
		return fmt.Errorf("the second request (%s): %w", what, err)
	}
	if err != nil {
		if took := time.Since(start); took < within {
			return fmt.Errorf("the second request (%s) failed after %v: %w", what, took.Round(time.Millisecond), err)
		}
		return fmt.Errorf("the second request (%s) got no answer within %v: %w", what, within, err)
	}
	return nil
}

// serverEnded describes, for a verdict, a server that has ended: how, and
// the tail of its stderr; "" if it is running. It is called when something
// failed, and gives a server whose stdout or stdin has just closed half a
// second to be seen to end: a process closes its descriptors before it can
// be reaped.
func serverEnded(s *mcptest.Session) string {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ex, err := s.WaitExit(ctx)
	if err != nil || ex.How == "" {
		return ""
	}
	msg := "the server ended (" + ex.String() + ")"
	if se := bytes.TrimSpace(s.Stderr()); len(se) > 0 {
		msg += fmt.Sprintf("; its stderr ends: %q", se[max(0, len(se)-300):])
	}
	return msg
}

// CheckStdoutClean exercises the session with tools/list and a tool call
// (cfg.Cheap, else cfg.Large, if configured) and checks that everything the
// server wrote to stdout so far was JSON-RPC within the transport limit: no
// junk lines (banners, logs), no parse errors, no oversized frames, no
// requests in the 2026-07-28 era.
func CheckStdoutClean(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	steps := []string{"handshake (" + s.ProtocolVersion() + ")"}
	var failed *Result // a call that failed: junk seen before it is the verdict all the same, this a note
	if _, err := s.Call(ctx, wire.MethodToolsList, map[string]any{}); err != nil {
		r := failErr(ruleStdoutClean, "tools/list", err)
		failed = &r
	} else {
		steps = append(steps, "tools/list")
	}
	call := cfg.Cheap
	if call == nil {
		call = cfg.Large
	}
	if call != nil && failed == nil {
		// An error answer is still JSON-RPC on stdout.
		if _, err := waitProgressing(ctx, s, s.Send(wire.MethodToolsCall, call.params(nil)), cfg.withDefaults().Within); err != nil {
			r := failErr(ruleStdoutClean, "tools/call "+call.Name, err)
			failed = &r
		} else {
			steps = append(steps, "tools/call "+call.Name)
		}
	}
	st := s.Stats()
	var problems []string
	if st.JunkLines > 0 {
		problems = append(problems, fmt.Sprintf("%d non-JSON lines", st.JunkLines))
	}
	if st.ParseErrors > 0 {
		problems = append(problems, fmt.Sprintf("%d lines that are not JSON-RPC", st.ParseErrors))
	}
	if st.Batches > 0 {
		problems = append(problems, fmt.Sprintf("%d JSON-RPC batches", st.Batches))
	}
	if st.OversizedFrames > 0 {
		problems = append(problems, fmt.Sprintf("%d frames over the transport limit", st.OversizedFrames))
	}
	if st.ProtocolViolations > 0 && isModernEra(s.ProtocolVersion()) {
		problems = append(problems, fmt.Sprintf("%d server-to-client requests, which the %s stdio transport forbids", st.ProtocolViolations, s.ProtocolVersion()))
	}
	if len(problems) > 0 {
		var junk []string
		for _, e := range s.Transcript() {
			if e.Junk {
				junk = append(junk, fmt.Sprintf("%q", e.Head))
			}
		}
		seen := ""
		if len(junk) > 0 {
			seen = "; junk seen: " + strings.Join(junk, ", ")
		}
		if failed != nil {
			seen += " (then " + failed.Evidence + ")"
		}
		return fail(ruleStdoutClean, "after %s, stdout is not clean: %s%s", strings.Join(steps, ", "), strings.Join(problems, ", "), seen)
	}
	if failed != nil {
		return *failed
	}
	return pass("%d frames, %d bytes, all JSON-RPC, through %s", st.Frames, st.StdoutBytes, strings.Join(steps, ", "))
}

// AssertStdoutClean is CheckStdoutClean for tests.
func AssertStdoutClean(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckStdoutClean(testContext(t), s, cfg))
}

// invalidJSONLine is a line that is not JSON: an unquoted value.
const invalidJSONLine = `{"jsonrpc":"2.0","id":"mcpstdio-bad","method":tools/list}` + "\n"

// gluedRequest is a valid request of the session's era, with a string id
// the host does not route, to follow an invalid line in the same write.
func gluedRequest(s *mcptest.Session, id string) []byte {
	if isModernEra(s.ProtocolVersion()) {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":%q,"params":{"_meta":{%q:%q,%q:{},%q:{"name":"mcptest","version":"0.1.0"}}}}`+"\n",
			id, wire.MethodDiscover, wire.MetaProtocolVersion, s.ProtocolVersion(), wire.MetaClientCapabilities, wire.MetaClientInfo)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%q,"method":%q}`+"\n", id, wire.MethodPing)
}

// CheckInvalidJSONInput writes an invalid JSON line to stdin twice: once
// with a valid request behind it in the same write, so that a server reading
// both at once must still handle the request, and once alone, followed by a
// request of the session's own in a second write. Both requests must be
// answered; the invalid line itself may be answered with an error or not at
// all.
func CheckInvalidJSONInput(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	t0 := time.Now()
	// One write: the invalid line and a request the host does not route,
	// whose answer is seen as an unknown id in the transcript.
	const id = "mcpstdio-after-invalid"
	if err := s.WriteStdin(ctx, append([]byte(invalidJSONLine), gluedRequest(s, id)...)); err != nil {
		return failErr(ruleInvalidJSON, "writing an invalid JSON line and a request in one write", err)
	}
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		if ended := serverEnded(s); ended != "" {
			return fail(ruleInvalidJSON, "after an invalid JSON line: %s", ended)
		}
		return failErr(ruleInvalidJSON, "after an invalid JSON line and a request in one write", err)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Within)
	missing := waitAnswered(wctx, s, []string{id})
	cancel()
	if len(missing) > 0 {
		res := fail(ruleInvalidJSON, "the request written in the same write as an invalid JSON line was never answered (within %v; the next request was): the server drops the rest of a read after a bad line", cfg.Within)
		// Its absence is known by a bound: in-process, where the server's
		// threads cannot be seen, a handler starved for the bound looks
		// the same (unseenBound).
		res.bound = true
		return res
	}
	// Two writes.
	if err := s.WriteStdin(ctx, []byte(invalidJSONLine)); err != nil {
		return failErr(ruleInvalidJSON, "writing an invalid JSON line alone", err)
	}
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		if ended := serverEnded(s); ended != "" {
			return fail(ruleInvalidJSON, "after an invalid JSON line in a write of its own: %s", ended)
		}
		return failErr(ruleInvalidJSON, "after an invalid JSON line in a write of its own", err)
	}
	return pass("an invalid JSON line, twice (with a request behind it in the same write, then alone), answered with %s; every request after it was answered", invalidAnswers(s, t0))
}

// invalidAnswers says what came from the server for the invalid lines:
// error responses whose id is null or missing (JSON-RPC's answer to a line
// whose id could not be read, as mcp-go writes -32700 with "id":null) or
// the invalid line's own, or silence. The glued request's own answer is not among them.
func invalidAnswers(s *mcptest.Session, t0 time.Time) string {
	var seen []string
	for _, e := range errorAnswers(s, t0, `"mcpstdio-bad"`) {
		id := "no id"
		if e.id != "" {
			id = "id " + e.id
		}
		seen = append(seen, fmt.Sprintf("%d %q, %s", e.code, e.message, id))
	}
	if len(seen) == 0 {
		return "silence"
	}
	return fmt.Sprintf("%d error response(s) (%s)", len(seen), strings.Join(seen, "; "))
}

// An errorAnswer is an error response of the server: its code, message
// and id (its JSON text, "" when it has none).
type errorAnswer struct {
	code        int64
	message, id string
}

// errorAnswers lists the error responses s received after t0 whose id is
// null, missing or one of ids (JSON texts): the answers to lines whose id
// the server could not read, or to the lines a criterion sent with ids.
func errorAnswers(s *mcptest.Session, t0 time.Time, ids ...string) []errorAnswer {
	var seen []errorAnswer
	for _, e := range s.Transcript() {
		if e.Dir != "←" || !e.At.After(t0) {
			continue
		}
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Code    int64  `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(e.Head, &m) != nil || m.Error == nil {
			continue
		}
		if id := string(m.ID); id == "" || id == "null" || slices.Contains(ids, id) {
			seen = append(seen, errorAnswer{m.Error.Code, m.Error.Message, id})
		}
	}
	return seen
}

// AssertInvalidJSONInput is CheckInvalidJSONInput for tests.
func AssertInvalidJSONInput(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckInvalidJSONInput(testContext(t), s, cfg))
}

// oversizedAllowance is the time oversized-input grants beyond Within:
// 250ms per MiB of the line.
func oversizedAllowance(cfg ServerConfig) time.Duration {
	return time.Duration(cfg.OversizedRequest>>20) * 250 * time.Millisecond
}

// oversizedRequest returns a well-formed tools/call request line of size
// bytes, newline included: big, not broken, so only its size is at issue.
func oversizedRequest(size int) []byte {
	head := []byte(`{"jsonrpc":"2.0","id":"mcpstdio-oversized","method":"tools/call","params":{"name":"mcpstdio-oversized","arguments":{"pad":"`)
	tail := []byte(`"}}}` + "\n")
	n := max(size-len(head)-len(tail), 0)
	b := make([]byte, 0, len(head)+n+len(tail))
	b = append(b, head...)
	b = append(b, bytes.Repeat([]byte("x"), n)...)
	return append(b, tail...)
}

// CheckOversizedInput writes a request line of cfg.OversizedRequest bytes to
// stdin, in 1 MiB writes so that the server's reading can be followed, and
// checks that the server survives it: the next request completes. It allows
// Within plus 250ms per MiB in all (the session's WithTimeout must allow a
// write that long; the battery sets it so); a server still reading when
// that runs out is reported as still reading, with its rate, not as
// stopped.
func CheckOversizedInput(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	line := oversizedRequest(cfg.OversizedRequest)
	total := int64(len(line))
	limit := cfg.Within + oversizedAllowance(cfg)
	begin := time.Now()
	sent0 := s.Stats().StdinBytes
	sent := func() int64 { return s.Stats().StdinBytes - sent0 }
	const chunk = 1 << 20
	for off := 0; off < len(line); off += chunk {
		part := line[off:min(off+chunk, len(line))]
		for {
			before := sent()
			err := s.WriteStdin(ctx, part) // bounded by the session's timeout, limit
			if err == nil {
				break
			}
			took, n := time.Since(begin), sent()
			if ended := serverEnded(s); ended != "" {
				return fail(ruleOversizedInput, "%s after reading %d of the %d bytes of an oversized request line", ended, n, total)
			}
			if ctx.Err() != nil || n == before {
				return failErr(ruleOversizedInput, fmt.Sprintf("writing a %d-byte request line, %d bytes read in %v, then nothing in %v (%s)", total, n, took.Round(time.Millisecond), limit, peakMemory(s)), err)
			}
			// The write made progress: slow, not stopped. Its rest goes
			// first on the next write; go on up to the cap.
			rate := float64(n) / took.Seconds()
			if took > 6*limit {
				return Result{Verdict: Warn, Rule: ruleOversizedInput, Evidence: fmt.Sprintf("slow, not stopped: still reading the %d-byte request line at %.0f KiB/s after %v (%d bytes), past the cap of 6×%v; the line needs %v: raise Within; %s",
					total, rate/1024, took.Round(time.Millisecond), n, limit, time.Duration(float64(total)/rate*float64(time.Second)).Round(100*time.Millisecond), peakMemory(s))}
			}
			part = nil
		}
	}
	wrote := time.Since(begin)
	if err := checkCheap(ctx, s, limit, cfg.Cheap); err != nil {
		if ended := serverEnded(s); ended != "" {
			return fail(ruleOversizedInput, "after a %d-byte request line, read in %v: %s", total, wrote.Round(time.Millisecond), ended)
		}
		return failErr(ruleOversizedInput, fmt.Sprintf("after a %d-byte request line, read in %v (%s)", total, wrote.Round(time.Millisecond), peakMemory(s)), err)
	}
	return pass("a %d-byte request line was read in %v and survived; the next request completed; %s", total, wrote.Round(time.Millisecond), peakMemory(s))
}

// peakMemory says what the server's peak memory has been so far, where it
// can be read.
func peakMemory(s *mcptest.Session) string {
	switch kb, err := peakMemoryKB(s.PID()); {
	case s.PID() == 0:
		return "peak memory unknown (an in-process server)"
	case err != nil:
		return "peak memory unknown (" + err.Error() + ")"
	default:
		return fmt.Sprintf("peak memory (VmHWM) %d KiB", kb)
	}
}

// AssertOversizedInput is CheckOversizedInput for tests.
func AssertOversizedInput(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckOversizedInput(testContext(t), s, cfg))
}
