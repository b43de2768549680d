package assertions

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// CheckShutdownStdinEOF closes the server's stdin, the graceful shutdown
// signal of the stdio transport, and checks that the server exits within
// cfg.ShutdownGrace; not exiting is a SHOULD-level warning.
func CheckShutdownStdinEOF(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	return checkShutdown(ctx, s, cfg, "stdin was closed", (*mcptest.Session).CloseStdin, ruleShutdownEOF)
}

// AssertShutdownStdinEOF is CheckShutdownStdinEOF for tests.
func AssertShutdownStdinEOF(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckShutdownStdinEOF(testContext(t), s, cfg))
}

// CheckShutdownSIGTERM sends the server SIGTERM and checks that it exits
// within cfg.ShutdownGrace; not exiting is a SHOULD-level warning. It is
// skipped for an in-process server.
func CheckShutdownSIGTERM(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	return checkShutdown(ctx, s, cfg, "SIGTERM", func(s *mcptest.Session) error { return s.Signal(syscall.SIGTERM) }, ruleShutdownTERM)
}

// AssertShutdownSIGTERM is CheckShutdownSIGTERM for tests.
func AssertShutdownSIGTERM(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckShutdownSIGTERM(testContext(t), s, cfg))
}

func checkShutdown(ctx context.Context, s *mcptest.Session, cfg ServerConfig, what string, trigger func(*mcptest.Session) error, rule string) Result {
	cfg = cfg.withDefaults()
	begin := time.Now()
	if err := trigger(s); err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return skip("%s does not apply to this target (%v)", what, err)
		}
		return failErr(rule, "shutting down with "+what, err)
	}
	wctx, cancel := context.WithTimeout(ctx, cfg.ShutdownGrace)
	defer cancel()
	exit, err := s.WaitExit(wctx)
	if err != nil {
		return Result{Verdict: Warn, Rule: rule, Evidence: fmt.Sprintf("still running %v after %s", cfg.ShutdownGrace, what)}
	}
	return pass("exited %v after %s (%s)", time.Since(begin).Round(time.Millisecond), what, exit)
}

// CheckEra checks the protocol era the session negotiated by the 2026-07-28
// stdio rule, and that a modern server writes no requests to stdout (a
// round trip first, so that anything sent unprompted has arrived).
func CheckEra(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	v := s.ProtocolVersion()
	if err := checkCheap(ctx, s, cfg.Within, cfg.Cheap); err != nil {
		return failErr(ruleEra, "round trip after negotiation", err)
	}
	if n := s.Stats().ProtocolViolations; n > 0 && isModernEra(v) {
		return fail(ruleEraModern, "negotiated %s, and the server wrote %d request(s) on stdout", v, n)
	}
	era := "legacy: the server/discover probe got no modern answer, so the initialize handshake"
	if isModernEra(v) {
		era = "modern: the server answered the server/discover probe"
	}
	return pass("negotiated %s (%s); no server-to-client requests on stdout%s", v, era, cfg.start.startNote())
}

// AssertEra is CheckEra for tests.
func AssertEra(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckEra(testContext(t), s, cfg))
}
