package page

import (
	"fmt"
	"math"
	"strings"

	"github.com/mcpstdio/mcpstdio/record"
)

// ending notes how the server ended: at its exit event, the exit in words
// (a clean exit, an exit status, the signal that killed it) and what the
// proxy did before it that explains it (killed it as its context ended,
// passed a signal on).
func (s *Session) ending(e record.Event) {
	switch e.Ev {
	case record.EvClose:
		if strings.Contains(e.Text, "killing the server") {
			s.cause = "killed by the proxy (" + e.Text + ")"
		}
	case record.EvSignal:
		if e.Err == "" && s.cause == "" {
			s.cause = "after the proxy passed on the " + e.Signal + " it received (from the host, or whoever signalled it)"
		}
	case record.EvExit:
		text := e.Status
		switch {
		case e.Exit != nil && *e.Exit == 0:
			text = "exit status 0 (a clean exit)"
		case text == "":
			text = "ended, how not recorded"
		}
		if s.cause != "" {
			text += ", " + s.cause
		}
		s.cause = ""
		s.Endings = append(s.Endings, text)
	}
}

// terminations says how many times the server ended and how each time.
func (s *Session) terminations(n int) string {
	t := fmt.Sprintf("terminations %d", n)
	if len(s.Endings) > 0 {
		t += ": " + strings.Join(s.Endings, "; ")
	}
	return t
}

// faultHolds says, per fault that stopped a direction (stop) or the
// server (sigstop), how long it held it: time the blocked-write metrics,
// which count the proxy's own writes, do not hold. "" if none.
func (s *Session) faultHolds() string {
	var order []string
	held := map[string]int64{}
	for _, b := range s.Blocks {
		if b.Kind == "block" {
			continue
		}
		end := b.End
		if end == 0 {
			end = s.End
		}
		k := b.Kind + " on " + dirName(b.Dir)
		if b.Kind == "sigstop" {
			k = "sigstop (the server stopped)"
		}
		if _, ok := held[k]; !ok {
			order = append(order, k)
		}
		d := max(end-b.Since, 0)
		held[k] = min(held[k], math.MaxInt64-d) + d // saturating
	}
	var p []string
	for _, k := range order {
		p = append(p, "fault "+k+" "+dur(held[k]))
	}
	return strings.Join(p, ", ")
}
