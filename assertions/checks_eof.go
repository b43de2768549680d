package assertions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// ruleEOFDrains is eof-drains-pending's rule.
const ruleEOFDrains = "JSON-RPC: every request gets a response; requests read before stdin closed are answered before the server exits"

// eofRequests is how many requests eof-drains-pending writes in one
// session, and eofSessions how many sessions it may run. A server that
// drops requests at stdin's end does so by a race between its handlers
// and its exit: the more requests are queued when the end arrives, the
// likelier the drop (mcp-go v1.2.1, five tools/call after the handshake,
// stdin then closed: 1 to 3 of 40 sessions dropped some, by hand at a load
// of 9; fifty: 38 of 40), and a race lost once is looked for again in fresh
// sessions, up to eofSessions or Within, failing at the first drop.
const (
	eofRequests = 50
	eofSessions = 8
)

// eofBatch returns the bytes eof-drains-pending writes in one write: the
// handshake (when the session has not negotiated: initialize and
// notifications/initialized in a legacy era, nothing in a modern one) and
// eofRequests requests with ids mcpstdio-eof-1…, and the ids that must be
// answered. The requests are tools/call (the Cheap call, else a tool that
// does not exist, answered with an error), the path where servers queue
// work, each second one replaced by the era's ping (ping or
// server/discover) when no Cheap call is given.
func eofBatch(s *mcptest.Session, cfg ServerConfig) ([]byte, []string) {
	version := s.ProtocolVersion()
	var b []byte
	var ids []string
	if version == "" {
		version = wire.Version20251125
		if cfg.start != nil {
			version = cfg.start.version
		}
		if !wire.IsModern(version) {
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","id":"mcpstdio-eof-init","method":%q,"params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"mcpstdio","version":"0"}}}`+"\n", wire.MethodInitialize, version)
			b = fmt.Appendf(b, `{"jsonrpc":"2.0","method":%q}`+"\n", wire.MethodInitialized)
			ids = append(ids, "mcpstdio-eof-init")
		}
	}
	for i := 1; i <= eofRequests; i++ {
		id := fmt.Sprintf("mcpstdio-eof-%d", i)
		ids = append(ids, id)
		method, params := wire.MethodToolsCall, map[string]any{"name": "mcpstdio-no-such-tool", "arguments": map[string]any{}}
		switch {
		case cfg.Cheap != nil:
			params = cfg.Cheap.params(nil)
		case i%2 == 0 && wire.IsModern(version):
			method, params = wire.MethodDiscover, map[string]any{}
		case i%2 == 0:
			method, params = wire.MethodPing, map[string]any{}
		}
		if wire.IsModern(version) {
			params["_meta"] = map[string]any{wire.MetaProtocolVersion: version, wire.MetaClientCapabilities: map[string]any{}, wire.MetaClientInfo: map[string]any{"name": "mcpstdio", "version": "0"}}
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		b = append(append(b, req...), '\n')
	}
	return b, ids
}

// CheckEOFDrainsPending writes 50 requests (tools/call of Cheap, else of a
// tool that does not exist, every second one ping or server/discover by
// era) in one write, with the handshake before them if the session has not
// negotiated (start it with mcptest.WithoutHandshake), closes stdin at
// once, and requires an answer to each before the server exits (an error
// answer counts: work cancelled by the end of stdin may be answered so). It
// waits for the answers, or the end of the server's stdout, within Within
// plus ShutdownGrace, plus StartTimeout when the write holds the handshake
// (the server's start-up is then in the wait). A drop at stdin's end is a
// race: called by the battery, it looks again in fresh sessions of the same
// server while none dropped a request, up to 8 sessions or Within, and
// fails at the first drop, saying in how many sessions and how the server
// ended; on a caller's session it runs once.
func CheckEOFDrainsPending(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	begin := time.Now()
	for n := 1; ; n++ {
		o := eofSession(ctx, s, cfg)
		if o.err != nil {
			return *o.err
		}
		of := ""
		if n > 1 || cfg.fresh != nil {
			of = fmt.Sprintf("1 of %d sessions dropped requests: ", n)
		}
		if len(o.missing) > 0 {
			return fail(ruleEOFDrains, "%s%d of the %s written just before stdin closed got no answer (%s); %s", of, len(o.missing), o.written, joinIDs(o.missing), o.ended)
		}
		if cfg.fresh == nil || n == eofSessions || time.Since(begin) >= cfg.Within || ctx.Err() != nil {
			sessions := ""
			if n > 1 {
				sessions = fmt.Sprintf(" in each of %d sessions", n)
			}
			return pass("the %s written just before stdin closed were all answered%s; %s", o.written, sessions, o.ended)
		}
		// One server at a time: an in-process one may keep state in its
		// package (mcp-go's stdio session).
		s.Close()
		next, err := cfg.fresh(ctx)
		if err != nil {
			return pass("the %s written just before stdin closed were all answered in each of %d sessions; %s (another session did not start: %v)", o.written, n, o.ended, firstLine(err.Error()))
		}
		defer next.Close()
		s = next
	}
}

// eofOutcome is one session of eof-drains-pending.
type eofOutcome struct {
	written string   // the requests written, in words: "50 requests", "initialize and 50 requests"
	missing []string // ids not answered
	ended   string   // how the server ended, or that it had not
	err     *Result  // the session could not be run
}

// eofSession writes the batch to s, closes its stdin, and waits for the
// answers.
func eofSession(ctx context.Context, s *mcptest.Session, cfg ServerConfig) eofOutcome {
	limit := cfg.Within + cfg.ShutdownGrace
	if s.ProtocolVersion() == "" {
		limit += cfg.StartTimeout // the batch holds the handshake: start-up is in this wait
	}
	batch, ids := eofBatch(s, cfg)
	if err := s.WriteStdin(ctx, batch); err != nil {
		res := failErr(ruleEOFDrains, fmt.Sprintf("writing %d requests in one write", len(ids)), err)
		return eofOutcome{err: &res}
	}
	if err := s.CloseStdin(); err != nil {
		res := failErr(ruleEOFDrains, "closing stdin", err)
		return eofOutcome{err: &res}
	}
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	// A server stopped by mcptest's rule (nothing written, no CPU, its
	// threads asleep) answers nothing more: the wait ends there.
	watched := make(chan *mcptest.Activity, 1)
	go func() {
		a, err := s.WaitStopped(wctx)
		if err != nil {
			watched <- nil
			return
		}
		watched <- &a
		cancel()
	}()
	missing := waitAnswered(wctx, s, ids)
	cancel()
	stopped := <-watched
	ended := fmt.Sprintf("it was still running %v after stdin closed", limit)
	if ex := s.Stats().Exit; ex.How != "" {
		ended = "it exited (" + ex.String() + ")"
	} else if len(missing) > 0 && stopped != nil {
		ended = "it had not exited, and " + stopped.String()
	} else if len(missing) == 0 {
		ended = "it had not exited yet"
	}
	written := fmt.Sprintf("%d requests", eofRequests)
	if len(ids) > eofRequests {
		written = fmt.Sprintf("initialize and %d requests", eofRequests)
	}
	return eofOutcome{written: written, missing: missing, ended: ended}
}

// waitAnswered waits until every id is answered, or the server's stdout
// has ended (every frame before its end read), or ctx ends, and returns
// the ids not answered.
func waitAnswered(ctx context.Context, s *mcptest.Session, ids []string) []string {
	for {
		missing := unanswered(s, ids)
		if len(missing) == 0 || ctx.Err() != nil {
			return missing
		}
		if s.Stats().Exit.How != "" {
			// A notification nobody sends: the wait ends when stdout
			// does, with every frame before its end read.
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			s.WaitNotification(sctx, "mcpstdio/stdout-end")
			cancel()
			return unanswered(s, ids)
		}
		// Answers to requests the host did not route have no event of
		// their own: the transcript is looked at every few milliseconds.
		if bound.Pass(ctx, 5*time.Millisecond) != nil {
			return missing
		}
	}
}

// unanswered returns the ids no frame from the server answers. Ids are
// compared by parsing, never as bytes: a server may write "id": "x", or
// escape it. A head the transcript cut short is scanned (wire.Scanner) for
// its top-level id.
func unanswered(s *mcptest.Session, ids []string) []string {
	got := map[string]bool{}
	for _, e := range s.Transcript() {
		if e.Dir != "←" {
			continue
		}
		var raw []byte
		if m, err := wire.ParseMessage(e.Head); err == nil {
			if !m.IsResponse() {
				continue
			}
			raw = m.ID
		} else {
			sc := wire.NewScanner(func(env wire.Envelope) { raw = bytes.Clone(env.ID) })
			sc.Write(append(bytes.Clone(e.Head), '\n'))
		}
		var id string
		if json.Unmarshal(raw, &id) == nil {
			got[id] = true
		}
	}
	var missing []string
	for _, id := range ids {
		if !got[id] {
			missing = append(missing, id)
		}
	}
	return missing
}

func joinIDs(ids []string) string {
	if len(ids) > 3 {
		return fmt.Sprintf("%s, %s … %s", ids[0], ids[1], ids[len(ids)-1])
	}
	return fmt.Sprint(ids)
}

// AssertEOFDrainsPending is CheckEOFDrainsPending for tests.
func AssertEOFDrainsPending(t testing.TB, s *mcptest.Session, cfg ServerConfig) {
	t.Helper()
	report(t, CheckEOFDrainsPending(testContext(t), s, cfg))
}
