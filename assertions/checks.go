package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// CheckNoDeadlock runs scenario under a watchdog. If scenario has not
// returned within the bound, it records the session's diagnosis, closes the
// session (which kills the server and closes every pipe, so whatever the
// scenario is blocked on fails), waits for scenario to return and reports the
// diagnosis. It returns scenario's error otherwise. The context scenario gets
// ends at the bound too; well-behaved scenarios use it for every wait.
func CheckNoDeadlock(ctx context.Context, s *mcptest.Session, within time.Duration, scenario func(ctx context.Context) error) error {
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- scenario(sctx) }()
	select {
	case err := <-done:
		return err
	case <-sctx.Done():
	}
	// The scenario may have returned just as the bound fired.
	select {
	case err := <-done:
		return err
	default:
	}
	diag := s.Diagnose()
	closeErr := s.Close()
	var serr error
	select {
	case serr = <-done:
	case <-time.After(within + 10*time.Second):
		serr = errors.New("the scenario did not return even after the session was closed: it blocks on something outside the session")
	}
	return fmt.Errorf("CheckNoDeadlock: scenario did not finish within %v; the server was killed (Close: %v); the scenario then returned: %v\ndiagnosis at the deadline:\n%s",
		within, closeErr, serr, diag)
}

// AssertNoDeadlock is CheckNoDeadlock for tests: it fails t with the
// diagnosis instead of letting the test binary time out.
func AssertNoDeadlock(t testing.TB, s *mcptest.Session, within time.Duration, scenario func(ctx context.Context) error) {
	t.Helper()
	if err := CheckNoDeadlock(testContext(t), s, within, scenario); err != nil {
		t.Error(err)
	}
}

// CheckSecondRequestCompletes sends one small independent request with a
// fresh id, Session.Ping (ping or server/discover, by era), and checks that
// it is answered within the bound. An error response to the ping counts as
// an answer: what is checked is that the server still responds.
func CheckSecondRequestCompletes(ctx context.Context, s *mcptest.Session, within time.Duration) error {
	return checkCheap(ctx, s, within, nil)
}

// checkCheap makes the cheap round trip: call, if given, else Session.Ping.
func checkCheap(ctx context.Context, s *mcptest.Session, within time.Duration, call *ToolCall) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	start := time.Now()
	var err error
	what := "Ping"
	if call != nil {
		what = "tools/call " + call.Name
		_, err = s.Call(ctx, wire.MethodToolsCall, call.params(nil))
	} else {
		err = s.Ping(ctx)
	}
	var rpc *wire.RPCError
	if errors.As(err, &rpc) {
		if call == nil {
			return nil // Ping answered with an error: the server is responsive
		}
		return fmt.Errorf("second request (%s) was answered with an error, %v: configure a cheap call that works", what, rpc)
	}
	if err != nil {
		return fmt.Errorf("second request (%s) got no answer within %v (after %v): %w", what, within, time.Since(start).Round(time.Millisecond), err)
	}
	return nil
}

// AssertSecondRequestCompletes is CheckSecondRequestCompletes for tests.
func AssertSecondRequestCompletes(t testing.TB, s *mcptest.Session, within time.Duration) {
	t.Helper()
	if err := CheckSecondRequestCompletes(testContext(t), s, within); err != nil {
		t.Errorf("AssertSecondRequestCompletes: %v", err)
	}
}

// CheckWriterBlocked checks that, with the host's reads stalled, the server
// ends up blocked writing its stdout within the bound: the reproduction step
// of every back-pressure bug. It stalls reads if they are not stalled yet;
// the caller has started something that writes a lot.
func CheckWriterBlocked(ctx context.Context, s *mcptest.Session, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	s.StallReads()
	if err := s.WaitWriterBlocked(ctx); err != nil {
		return fmt.Errorf("the server did not block writing stdout within %v with reads stalled: %w", within, err)
	}
	return nil
}

// AssertWriterBlocked is CheckWriterBlocked for tests.
func AssertWriterBlocked(t testing.TB, s *mcptest.Session, within time.Duration) {
	t.Helper()
	if err := CheckWriterBlocked(testContext(t), s, within); err != nil {
		t.Errorf("AssertWriterBlocked: %v", err)
	}
}

// CheckCancelStopsWork cancels p and checks that the work stopped: after a
// grace period of within, no further message for the request arrives —
// neither progress notifications carrying its progress token nor a response —
// during a second window of within. A response or progress that arrives
// during the grace period was in flight and is tolerated (a response is then
// reported as late by the session). It needs host reads to flow.
//
// The check sees the work only through the wire: progress needs the request
// to carry a progress token (params._meta.progressToken); work that emits
// nothing is judged by its response alone.
func CheckCancelStopsWork(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, within time.Duration) error {
	if err := p.Cancel("mcpstdio: CheckCancelStopsWork"); err != nil {
		return fmt.Errorf("sending notifications/cancelled for id=%d: %w", p.ID(), err)
	}
	if err := waitFor(ctx, within); err != nil {
		return err
	}
	progress1, responded1 := p.Progress(), responded(p)
	if err := waitFor(ctx, within); err != nil {
		return err
	}
	progress2, responded2 := p.Progress(), responded(p)
	var problems []string
	if progress2 > progress1 {
		problems = append(problems, fmt.Sprintf("%d progress notifications for id=%d arrived more than %v after the cancel", progress2-progress1, p.ID(), within))
	}
	if responded2 && !responded1 {
		problems = append(problems, fmt.Sprintf("the response to id=%d arrived more than %v after the cancel", p.ID(), within))
	}
	if len(problems) > 0 {
		return &WorkContinuedError{ID: p.ID(), Problems: problems, Diagnosis: s.Diagnose()}
	}
	return nil
}

// WorkContinuedError is CheckCancelStopsWork's error when messages for the
// cancelled request kept arriving after the grace period. Any other error
// of the check is about the check itself (the cancel could not be sent, the
// context ended).
type WorkContinuedError struct {
	ID        int64    // the cancelled request
	Problems  []string // what kept arriving
	Diagnosis string   // Session.Diagnose at the end of the check
}

// Error lists what kept arriving, then the diagnosis.
func (e *WorkContinuedError) Error() string {
	return fmt.Sprintf("work on id=%d did not stop after notifications/cancelled: %s\n%s", e.ID, strings.Join(e.Problems, "; "), e.Diagnosis)
}

// AssertCancelStopsWork is CheckCancelStopsWork for tests.
func AssertCancelStopsWork(t testing.TB, s *mcptest.Session, p *mcptest.Pending, within time.Duration) {
	t.Helper()
	if err := CheckCancelStopsWork(testContext(t), s, p, within); err != nil {
		t.Errorf("AssertCancelStopsWork: %v", err)
	}
}

// CheckStdoutClean checks that everything the server wrote to stdout so far
// was JSON-RPC within the transport limit: no junk lines (banners, logs), no
// parse errors, no oversized frames, no requests in the 2026-07-28 era.
func CheckStdoutClean(s *mcptest.Session) error {
	st := s.Stats()
	var problems []string
	if st.JunkLines > 0 {
		problems = append(problems, fmt.Sprintf("%d non-JSON lines", st.JunkLines))
	}
	if st.ParseErrors > 0 {
		problems = append(problems, fmt.Sprintf("%d lines that are not JSON-RPC", st.ParseErrors))
	}
	if st.OversizedFrames > 0 {
		problems = append(problems, fmt.Sprintf("%d frames over the transport limit", st.OversizedFrames))
	}
	if st.ProtocolViolations > 0 {
		problems = append(problems, fmt.Sprintf("%d server-to-client requests, which the %s stdio transport forbids", st.ProtocolViolations, s.ProtocolVersion()))
	}
	if len(problems) == 0 {
		return nil
	}
	var junk []string
	for _, e := range s.Transcript() {
		if e.Junk {
			junk = append(junk, fmt.Sprintf("%q", e.Head))
		}
	}
	return fmt.Errorf("stdout is not clean: %s; junk seen: %s", strings.Join(problems, ", "), strings.Join(junk, ", "))
}

// AssertStdoutClean is CheckStdoutClean for tests.
func AssertStdoutClean(t testing.TB, s *mcptest.Session) {
	t.Helper()
	if err := CheckStdoutClean(s); err != nil {
		t.Errorf("AssertStdoutClean: %v", err)
	}
}

// ToolCall names a tools/call request: the tool and its arguments.
type ToolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// String formats the call as the command line takes it: name, then the
// arguments as JSON if there are any.
func (c *ToolCall) String() string {
	if len(c.Arguments) == 0 {
		return c.Name
	}
	args, _ := json.Marshal(c.Arguments)
	return fmt.Sprintf("%s %s", c.Name, args)
}

// params returns tools/call params, with a progress token if token is set.
func (c *ToolCall) params(token any) map[string]any {
	p := map[string]any{"name": c.Name}
	if c.Arguments != nil {
		p["arguments"] = c.Arguments
	}
	if token != nil {
		p["_meta"] = map[string]any{"progressToken": token}
	}
	return p
}

// tokens numbers the progress tokens the batteries give their requests.
var tokens atomic.Int64

// newProgressToken returns a progress token no other request of this
// process carries, so progress can be attributed to its request.
func newProgressToken() string { return fmt.Sprintf("mcpstdio-%d", tokens.Add(1)) }

// ended reports whether p has ended: answered, or failed.
func ended(p *mcptest.Pending) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// responded reports whether p's response has arrived (not merely whether
// p has ended: a failed write or a closed session ends it too).
func responded(p *mcptest.Pending) bool {
	select {
	case <-p.Done():
		r, err := p.Wait(context.Background())
		return err == nil && r != nil
	default:
		return false
	}
}

// waitFor lets d pass: the observation window of a check that must prove
// something does not happen. It is a measurement, not synchronization.
func waitFor(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// testContext returns a context that ends shortly before t's deadline, so
// that a check's own bound fails the test by name rather than the binary.
func testContext(t testing.TB) context.Context {
	ctx := context.Background()
	if tc, ok := t.(interface{ Context() context.Context }); ok {
		ctx = tc.Context()
	}
	if dt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := dt.Deadline(); ok {
			c, cancel := context.WithDeadline(ctx, dl.Add(-5*time.Second))
			t.Cleanup(cancel)
			ctx = c
		}
	}
	return ctx
}
