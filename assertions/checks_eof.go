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

// eofRequests is how many requests eof-drains-pending writes.
const eofRequests = 5

// eofBatch returns the bytes eof-drains-pending writes in one write: the
// handshake (when the session has not negotiated: initialize and
// notifications/initialized in a legacy era, nothing in a modern one) and
// eofRequests cheap requests with ids mcpstdio-eof-1…, and the ids that must
// be answered.
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
		params := map[string]any{}
		method := wire.MethodPing
		if cfg.Cheap != nil {
			method, params = wire.MethodToolsCall, cfg.Cheap.params(nil)
		} else if wire.IsModern(version) {
			method = wire.MethodDiscover
		}
		if wire.IsModern(version) {
			params["_meta"] = map[string]any{wire.MetaProtocolVersion: version, wire.MetaClientCapabilities: map[string]any{}, wire.MetaClientInfo: map[string]any{"name": "mcpstdio", "version": "0"}}
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		b = append(append(b, req...), '\n')
	}
	return b, ids
}

// CheckEOFDrainsPending writes several cheap requests (Cheap, else ping or
// server/discover by era) in one write, with the handshake before them if
// the session has not negotiated (start it with mcptest.WithoutHandshake),
// closes stdin at once, and requires an answer to each before the server
// exits (an error answer counts: work cancelled by the end of stdin may be
// answered so). It waits for the answers, or the end of the server's
// stdout, within Within plus ShutdownGrace, plus StartTimeout when the
// write holds the handshake (the server's start-up is then in the wait);
// the failure says how many requests were dropped and how the server
// ended.
func CheckEOFDrainsPending(ctx context.Context, s *mcptest.Session, cfg ServerConfig) Result {
	cfg = cfg.withDefaults()
	limit := cfg.Within + cfg.ShutdownGrace
	if s.ProtocolVersion() == "" {
		limit += cfg.StartTimeout // the batch holds the handshake: start-up is in this wait
	}
	batch, ids := eofBatch(s, cfg)
	if err := s.WriteStdin(ctx, batch); err != nil {
		return failErr(ruleEOFDrains, fmt.Sprintf("writing %d requests in one write", len(ids)), err)
	}
	if err := s.CloseStdin(); err != nil {
		return failErr(ruleEOFDrains, "closing stdin", err)
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
	if len(missing) > 0 {
		return fail(ruleEOFDrains, "%d of the %d requests written just before stdin closed got no answer (%s); %s", len(missing), len(ids), joinIDs(missing), ended)
	}
	return pass("all %d requests written just before stdin closed were answered; %s", len(ids), ended)
}

// waitAnswered waits until every id is answered, or the server's stdout
// has ended (every frame before its end read), or ctx ends, and returns
// the ids not answered.
func waitAnswered(ctx context.Context, s *mcptest.Session, ids []string) []string {
	for {
		var missing []string
		for _, id := range ids {
			if !answered(s, id) {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 || ctx.Err() != nil {
			return missing
		}
		if s.Stats().Exit.How != "" {
			// A notification nobody sends: the wait ends when stdout
			// does, with every frame before its end read.
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			s.WaitNotification(sctx, "mcpstdio/stdout-end")
			cancel()
			missing = missing[:0]
			for _, id := range ids {
				if !answered(s, id) {
					missing = append(missing, id)
				}
			}
			return missing
		}
		// Answers to requests the host did not route have no event of
		// their own: the transcript is looked at every few milliseconds.
		if bound.Pass(ctx, 5*time.Millisecond) != nil {
			return missing
		}
	}
}

// answered reports whether a frame from the server answers the request
// with this id. Ids are compared by parsing, never as bytes: a server may
// write "id": "x", or escape it. A head the transcript cut short is
// scanned (wire.Scanner) for its top-level id.
func answered(s *mcptest.Session, id string) bool {
	for _, e := range s.Transcript() {
		if e.Dir != "←" {
			continue
		}
		if m, err := wire.ParseMessage(e.Head); err == nil {
			if m.IsResponse() && sameID(m.ID, id) {
				return true
			}
			continue
		}
		var got []byte
		sc := wire.NewScanner(func(env wire.Envelope) { got = bytes.Clone(env.ID) })
		sc.Write(append(bytes.Clone(e.Head), '\n'))
		if sameID(got, id) {
			return true // a response whose head the transcript cut
		}
	}
	return false
}

// sameID reports whether the raw JSON id is the string id.
func sameID(raw []byte, id string) bool {
	var v string
	return json.Unmarshal(raw, &v) == nil && v == id
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
