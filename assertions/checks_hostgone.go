package assertions

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ruleHostGone is host-gone's rule.
const ruleHostGone = "a server whose host went away (the reader of its stdout closed, then its stdin) ends within its bound without crashing: exit status 0 or a signal (SIGPIPE, the host's SIGTERM), never an uncaught error and its trace"

// CheckHostGone makes the server write, then goes away as a host that
// exited or crashed does, and judges how the server ends. The writing is
// the Large call with the host's reads stalled until the server's stdout
// blocks, else the Slow call once its first progress notification arrives
// (without either it skips); then the host's end of stdout is closed
// (mcptest.Session.CloseStdout), so that the write fails with EPIPE or
// SIGPIPE, and stdin is closed. A server still running ShutdownGrace later
// gets SIGTERM and another ShutdownGrace. It passes an exit with status 0,
// an end by SIGPIPE (the default for a write nobody reads, with no trace)
// or by that SIGTERM; it fails a crash (a non-zero exit with a crash trace on
// stderr, whose first line it quotes; another signal; a panic in process)
// and a server still running; a non-zero exit without a trace it can
// recognise (Go's, Node's, Python's, Rust's, Java's and .NET's are) is a
// warning. It ends with the session closed (Close), once the server has
// ended or the bound has passed.
func CheckHostGone(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	what, res, ok := startWriting(ctx, s, cfg)
	if !ok {
		return res
	}
	if ended := serverEnded(s); ended != "" {
		return fail(ruleHostGone, "%s before its host went away, while %s", ended, what)
	}
	t0 := time.Now()
	if err := s.CloseStdout(); err != nil {
		return failErr(ruleHostGone, "closing the host's end of the server's stdout", err)
	}
	if err := s.CloseStdin(); err != nil {
		return failErr(ruleHostGone, "closing the server's stdin after its stdout", err)
	}
	ex, ended := waitExitWithin(ctx, s, cfg.ShutdownGrace)
	termed := false
	if !ended {
		if err := s.Signal(syscall.SIGTERM); err == nil {
			termed = true
			ex, ended = waitExitWithin(ctx, s, cfg.ShutdownGrace)
		}
	}
	after := time.Since(t0).Round(time.Millisecond)
	gone := fmt.Sprintf("its host went away (stdout's reader closed, then stdin) while %s", what)
	if !ended {
		still := fmt.Sprintf("still running %v after %s", after, gone)
		if termed {
			still += fmt.Sprintf(", and after the SIGTERM sent %v in", cfg.ShutdownGrace)
		}
		_ = s.Close()
		return fail(ruleHostGone, "%s", still)
	}
	// Close waits for the server's stderr to end: all of a trace is read.
	_ = s.Close()
	trace, crashed := crashTrace(s.Stderr())
	switch {
	case ex.How == mcptest.ExitPanicked:
		return fail(ruleHostGone, "it panicked %v after %s: %s", after, gone, firstLine(fmt.Sprint(ex.Err)))
	case ex.Signal == "SIGPIPE":
		return pass("ended by SIGPIPE %v after %s: its write found no reader, and the default action ended it with no trace (no cleanup of its own ran)", after, gone)
	case ex.Signal == "SIGTERM" && termed:
		return pass("still running %v after %s; the SIGTERM then sent ended it (see shutdown-stdin-eof)", cfg.ShutdownGrace, gone)
	case ex.Signal != "":
		res := fail(ruleHostGone, "killed by %s %v after %s: a crash", ex.Signal, after, gone)
		if crashed {
			res.Evidence += fmt.Sprintf("; its stderr: %q", trace)
		}
		return res
	case ex.Code == 0 || s.PID() == 0:
		return pass("it ended %v after %s: %s", after, gone, ex)
	case crashed:
		return fail(ruleHostGone, "it crashed %v after %s: %s, with a crash trace on stderr: %q", after, gone, ex, trace)
	}
	last := "its stderr is empty"
	if se := bytes.TrimSpace(s.Stderr()); len(se) > 0 {
		last = fmt.Sprintf("its stderr ends %q", lastLine(string(se)))
	}
	return Result{Verdict: Warn, Rule: ruleHostGone, Evidence: fmt.Sprintf("it ended %v after %s: %s, and %s: an error exit, though no crash trace was recognised", after, gone, ex, last)}
}

// startWriting starts what host-gone goes away from: the Large call,
// blocked writing stdout, or the Slow call, sending progress. ok is false
// when it could not, and res then says why.
func startWriting(ctx context.Context, s *mcptest.Session, cfg ServerConfig) (what string, res Result, ok bool) {
	switch {
	case cfg.Large != nil:
		s.StallReads()
		big := s.Send(wire.MethodToolsCall, cfg.Large.params(nil))
		if err := s.WaitWriterBlocked(ctx); err != nil {
			res := largeNotBlocking(ctx, s, big, cfg, err)
			if res.Verdict == Fail && res.Rule == ruleSecondRequest {
				res.Rule = ruleHostGone
			}
			return "", res, false
		}
		return fmt.Sprintf("the Large call (%s) was blocked writing its response (%s)", cfg.Large.describe(), s.Stats().WriterEvidence), Result{}, true
	case cfg.Slow != nil:
		s.Send(wire.MethodToolsCall, cfg.Slow.params(newProgressToken()))
		wctx, cancel := context.WithTimeout(ctx, cfg.Within)
		defer cancel()
		if _, err := s.WaitNotification(wctx, wire.MethodProgress); err != nil {
			if ended := serverEnded(s); ended != "" {
				return "", fail(ruleHostGone, "%s while the Slow call (%s) ran", ended, cfg.Slow.describe()), false
			}
			return "", skip("the Slow call (%s) sent no progress within %v: nothing showed it writing (configure Large)", cfg.Slow.describe(), cfg.Within), false
		}
		return fmt.Sprintf("the Slow call (%s) was sending progress", cfg.Slow.describe()), Result{}, true
	}
	return "", skip("no Large or Slow tool call configured (ServerConfig.Large, ServerConfig.Slow): nothing to write while the host goes away"), false
}

// waitExitWithin waits at most d for the server to end.
func waitExitWithin(ctx context.Context, s *mcptest.Session, d time.Duration) (mcptest.Exit, bool) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	ex, err := s.WaitExit(wctx)
	return ex, err == nil && ex.How != ""
}

// crashMark matches the line an uncaught error's trace starts with, or
// names it by: Go, Node, Python, Rust, Java and .NET.
var crashMark = regexp.MustCompile(`^(panic: |fatal error: |Traceback \(most recent call last\)|thread '.*' panicked|Exception in thread |Unhandled exception\.|Uncaught )|Unhandled '?error'? event|UnhandledPromiseRejection`)

// crashError matches the line that names the error, after the mark.
var crashError = regexp.MustCompile(`^[\w.$]*(Error|Exception)\b`)

// crashTrace finds a crash trace in stderr and returns its mark's line, and
// the line naming the error if one follows within a few lines.
func crashTrace(stderr []byte) (string, bool) {
	lines := strings.Split(string(stderr), "\n")
	for i, l := range lines {
		mark := strings.TrimSpace(l)
		if !crashMark.MatchString(mark) {
			continue
		}
		for _, next := range lines[i+1 : min(i+40, len(lines))] {
			if e := strings.TrimSpace(next); crashError.MatchString(e) && e != mark {
				return truncate(mark, 200) + " … " + truncate(e, 200), true
			}
		}
		return truncate(mark, 300), true
	}
	return "", false
}

// AssertHostGone is CheckHostGone for tests.
func AssertHostGone(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckHostGone(testContext(t), s, cfg))
}
