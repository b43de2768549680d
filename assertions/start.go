package assertions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Starting and negotiating are apart from the criteria: the battery starts
// the server once first, bounded by StartTimeout (a server that never
// starts fails "start" once, and no criterion runs), and learns how it
// negotiates; every criterion's session then gets StartTimeout for its own
// start, never counted in Within.
//
// A server that ends, or closes its stdout, when its first message is not
// initialize (the official Rust SDK's) is started again and negotiated with
// initialize; the criteria then pin that era, and the era criterion says
// so. A server silent to the server/discover probe is pinned to the era it
// negotiated, so that no criterion waits out the probe again.

// ruleStart is the rule of the "start" result.
const ruleStart = "the server starts from its command and negotiates MCP (server/discover, else initialize) within StartTimeout"

// serverStart is what the battery's first start learned.
type serverStart struct {
	version string        // the protocol negotiated
	took    time.Duration // starting and negotiating
	pin     string        // the version the criteria pin, or ""
	note    string        // for the era criterion: how it was negotiated
}

// options are the start options of a criterion's session.
func (st *serverStart) options(cfg ServerConfig) []mcptest.Option {
	opts := []mcptest.Option{mcptest.WithStartTimeout(cfg.StartTimeout)}
	switch {
	case st == nil:
	case st.pin != "":
		opts = append(opts, mcptest.WithProtocolVersion(st.pin))
	default:
		opts = append(opts, mcptest.WithProbeTimeout(cfg.StartTimeout))
	}
	return opts
}

// startOnce starts the server once, as the criteria will, and closes it;
// it returns what it learned, or the "start" failure.
func startOnce(ctx context.Context, target mcptest.Target, cfg ServerConfig) (*serverStart, Result) {
	base := []mcptest.Option{mcptest.WithStartTimeout(cfg.StartTimeout), mcptest.WithGrace(min(cfg.ShutdownGrace, 200*time.Millisecond))}
	pinned := cfg.Protocol
	var opts []mcptest.Option
	if pinned != "" {
		opts = append(opts, mcptest.WithProtocolVersion(pinned))
	} else {
		opts = append(opts, mcptest.WithProbeTimeout(cfg.StartTimeout))
	}
	begin := time.Now()
	s, err := mcptest.Start(ctx, target, cfg.options(append(base, opts...)...)...)
	st := &serverStart{pin: pinned}
	if err != nil && pinned == "" && !errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		// Ended on the probe? Start it again with initialize first.
		first := firstLine(err.Error())
		begin = time.Now()
		s, err = mcptest.Start(ctx, target, cfg.options(append(base, mcptest.WithProtocolVersion(wire.Version20251125))...)...)
		if err == nil {
			st.pin = wire.Version20251125
			st.note = fmt.Sprintf("the server/discover probe ended the first server (%s); started again, it negotiated with initialize", strings.TrimPrefix(first, "mcptest: "))
		}
	}
	if err != nil {
		first, rest, _ := strings.Cut(strings.TrimSpace(err.Error()), "\n")
		// Only a bound that was waited out is named: an exec error or an
		// early exit says what happened, and when.
		what := fmt.Sprintf("could not start it and negotiate MCP: it failed after %s, no bound ran out: ", roundMS(time.Since(begin)))
		if errors.Is(err, context.DeadlineExceeded) {
			what = "could not start it and negotiate MCP within " + cfg.StartTimeout.String() + ": "
		}
		return nil, Result{Name: "start", Verdict: Fail, Rule: ruleStart, Evidence: what + first, Details: rest}
	}
	st.took, st.version = time.Since(begin), s.ProtocolVersion()
	if st.pin == "" && !isModernEra(st.version) && probeUnanswered(s) {
		st.pin = st.version
		st.note = "the server/discover probe got no answer, so the criteria start with initialize"
	}
	if pinned != "" {
		st.note = "pinned to " + pinned + " (Protocol)"
	}
	s.Close()
	res := pass("started and negotiated protocol %s in %v", st.version, st.took.Round(time.Millisecond))
	if st.note != "" {
		res.Evidence += " (" + st.note + ")"
	}
	res.Name, res.Rule = "start", ruleStart
	return st, res
}

// probeUnanswered reports whether the session's negotiation took the server
// for a legacy one because the probe got no answer at all.
func probeUnanswered(s *mcptest.Session) bool {
	for _, e := range s.Transcript() {
		if e.Dir == "!" && strings.Contains(string(e.Head), "no answer to server/discover") {
			return true
		}
	}
	return false
}

// startNote is the start's evidence for the era criterion.
func (st *serverStart) startNote() string {
	if st == nil {
		return ""
	}
	note := fmt.Sprintf("; the first start took %v", st.took.Round(time.Millisecond))
	if st.note != "" {
		note = "; " + st.note + note
	}
	return note
}
