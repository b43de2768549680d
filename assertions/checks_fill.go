package assertions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Without a Large call, reads-while-blocked and stall-cancel-recover block
// the server's stdout with its own answers: with the host's reads stalled,
// the era's cheapest request (ping, or server/discover in 2026-07-28) is
// written in batches until the server's stdout is blocked (a thread in
// write on it, or the pipe full and not draining), exactly as one large
// result would block it. A server whose stdin reader waits on its writer
// stops taking the flood behind them in the same way.

// fillIDBase is the first fill request's id, less one: integers, apart
// from the flood's.
const fillIDBase = 2_000_000_000

// fillBatch is how many fill requests go in one write, and fillMax the
// most written (their answers are then far more than any pipe holds).
const (
	fillBatch = 64
	fillMax   = 64 * fillBatch
)

// filled is what fillStdout did.
type filled struct {
	method string        // the request that filled stdout
	sent   int           // requests written
	took   time.Duration // until the writer was blocked, or the wait ended
	last   int64         // the id of the last request written whole
}

// describe says what filled stdout, for evidence.
func (f filled) describe() string {
	return fmt.Sprintf("its own answers to %d %s requests (no Large call given)", f.sent, f.method)
}

// fillStdout stalls the host's reads and writes the era's cheapest request
// in batches until WaitWriterBlocked returns, and returns what it wrote and
// that wait's error.
func fillStdout(ctx context.Context, s *mcptest.Session) (filled, error) {
	s.StallReads()
	f := filled{method: pingMethod(s)}
	var params map[string]any
	if v := s.ProtocolVersion(); isModernEra(v) {
		params = map[string]any{"_meta": map[string]any{wire.MetaProtocolVersion: v, wire.MetaClientCapabilities: map[string]any{}, wire.MetaClientInfo: map[string]any{"name": "mcpstdio", "version": "0"}}}
	}
	begin := time.Now()
	wctx, stop := context.WithCancel(ctx)
	wrote := make(chan filled, 1)
	go func() {
		w := f
		defer func() { wrote <- w }()
		for w.sent < fillMax && wctx.Err() == nil {
			var b []byte
			for i := 0; i < fillBatch; i++ {
				req := map[string]any{"jsonrpc": "2.0", "id": fillIDBase + w.sent + i + 1, "method": w.method}
				if params != nil {
					req["params"] = params
				}
				line, _ := json.Marshal(req)
				b = append(append(b, line...), '\n')
			}
			if err := s.WriteStdin(wctx, b); err != nil {
				// Cut short by the wait's end (its rest goes first with
				// the next write) or by the server: the wait says which.
				if wctx.Err() == nil {
					<-wctx.Done()
				}
				return
			}
			w.sent += fillBatch
			w.last = int64(fillIDBase + w.sent)
		}
	}()
	err := s.WaitWriterBlocked(ctx)
	stop()
	f = <-wrote
	f.took = time.Since(begin)
	return f, err
}

// fillNotBlocking judges a check whose fill did not block the server's
// stdout within WaitWriterBlocked's bound (err).
func fillNotBlocking(s *mcptest.Session, f filled, err error) Result {
	var nb *mcptest.NotBlockedError
	if !errors.As(err, &nb) {
		if e := serverEnded(s); e != "" {
			return fail(ruleSecondRequest, "%s while %d %s requests were written with the host's reads stalled", e, f.sent, f.method)
		}
		return failErr("", "waiting for the server's answers to block its stdout", err)
	}
	if s.Stats().Exit.How != "" {
		res := fail(ruleSecondRequest, "%s while %d %s requests were written with the host's reads stalled, before its stdout blocked (%s)", serverEnded(s), f.sent, f.method, nb.Summary())
		res.Details = nb.Wait.Diagnosis
		return res
	}
	if why, ok := stillWriting(nb, "Within"); ok {
		return Result{Verdict: Warn, Rule: ruleReadsBlocked, Evidence: fmt.Sprintf("unverified: the server's answers to %d %s requests did not block its stdout within %v, but %s", f.sent, f.method, nb.Waited.Round(time.Millisecond), why), Details: nb.Wait.Diagnosis}
	}
	return Result{Verdict: Warn, Rule: ruleReadsBlocked, Evidence: fmt.Sprintf("unverified: %d %s requests written with the host's reads stalled did not block the server's stdout within %v (%s): give a Large call (probe -large) whose result is far larger than the pipe", f.sent, f.method, nb.Waited.Round(time.Millisecond), nb.Summary()), Details: nb.Wait.Diagnosis}
}
