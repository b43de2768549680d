package assertions

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// ruleCRLFInput is crlf-input's rule.
const ruleCRLFInput = `stdio: messages are delimited by newlines; a line ending in "\r\n" (as hosts on Windows write) is a message like any other, and a line holding only "\r\n" is not one: the session goes on`

// CheckCRLFInput writes, in one write, a request whose line ends in
// "\r\n", a line holding only "\r\n" and a request ending in "\n", and
// requires both requests answered (the blank line may get an error answer
// or none) and then a further request (the Cheap call, or the era's ping),
// each within Within. The two requests are the era's ping (ping, or
// server/discover).
func CheckCRLFInput(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	t0 := time.Now()
	// Ids the host does not route: their answers are found in the transcript.
	const crlfID, afterID = "mcpstdio-crlf", "mcpstdio-after-crlf"
	b := bytes.TrimSuffix(gluedRequest(s, crlfID), []byte("\n"))
	b = append(b, "\r\n\r\n"...)
	b = append(b, gluedRequest(s, afterID)...)
	if err := s.WriteStdin(ctx, b); err != nil {
		return failErr(ruleCRLFInput, `writing a request ending in "\r\n", a "\r\n" line and a request`, err)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.Within)
	missing := waitAnswered(wctx, s, []string{crlfID, afterID})
	cancel()
	if len(missing) > 0 {
		what := fmt.Sprintf(`of a request ending in "\r\n" (%s), a "\r\n" line and a request behind them (%s), written in one write, %s got no answer`, crlfID, afterID, strings.Join(missing, " and "))
		if ended := serverEnded(s); ended != "" {
			return fail(ruleCRLFInput, "%s: %s", what, ended)
		}
		res := fail(ruleCRLFInput, "%s within %v", what, cfg.Within)
		res.bound = true // a server that still runs: a bound ran out (unseenBound)
		return res
	}
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		if ended := serverEnded(s); ended != "" {
			return fail(ruleCRLFInput, `after a request ending in "\r\n" and a "\r\n" line: %s`, ended)
		}
		return failErr(ruleCRLFInput, `after a request ending in "\r\n" and a "\r\n" line`, err)
	}
	return pass(`a request ending in "\r\n", a "\r\n" line and a request behind them, in one write, were answered (the blank line: %s); a further request was too`, blankLineAnswers(s, t0))
}

// blankLineAnswers says what answered the blank line: error responses with
// a null id or none, or silence.
func blankLineAnswers(s *mcptest.Session, t0 time.Time) string {
	var seen []string
	for _, e := range errorAnswers(s, t0) {
		seen = append(seen, fmt.Sprintf("%d %q", e.code, e.message))
	}
	if len(seen) == 0 {
		return "silence"
	}
	return "an error answer with no id: " + strings.Join(seen, "; ")
}

// AssertCRLFInput is CheckCRLFInput for tests.
func AssertCRLFInput(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckCRLFInput(testContext(t), s, cfg))
}
