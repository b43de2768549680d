package cancelrule

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Verdict is what the cancel rule found.
type Verdict int

const (
	// Unverified: nothing showed whether the work stopped or went on (the
	// call sent no progress, its CPU use could not be told from idle or from
	// the server's own background, it started no process). Reported as a
	// warning, never as a pass.
	Unverified Verdict = iota
	// Stopped: the work stopped and no response came. A pass.
	Stopped
	// StoppedAnswered: the work stopped, but the cancelled request was
	// answered anyway. A warning: a response after a cancel is a SHOULD NOT
	// before the 2026-07-28 revision and a MUST NOT on its stdio transport.
	StoppedAnswered
	// WentOn: the work went on after the grace. A failure.
	WentOn
)

func (v Verdict) String() string {
	switch v {
	case Stopped:
		return "stopped"
	case StoppedAnswered:
		return "stopped, answered"
	case WentOn:
		return "went on"
	}
	return "unverified"
}

// Outcome is the cancel rule's verdict with its evidence.
type Outcome struct {
	Verdict Verdict
	// Evidence says what was seen, in the words the criteria print:
	// "work went on after notifications/cancelled: 85 progress
	// notifications for id=2 arrived 200ms–1.228s after the cancel; …".
	Evidence string
	// Response is the cancelled request's response if it came while
	// watched, nil otherwise.
	Response *mcptest.Response
}

// Judge turns what Watch saw into an Outcome, against g, the call's
// Signature at work (Unknown() if it was not seen at work). callDuration is
// how long the call works when it is not cancelled, 0 if unknown: a silence
// that lasts longer is evidence that the work stopped. Judge does not block.
func (c *Seen) Judge(g Signature, callDuration time.Duration) Outcome {
	era := c.s.ProtocolVersion()
	window := c.end.at.Sub(c.afterGrace.at)
	var went []string
	// One notification can be one written before the cancel and read late
	// (a loaded machine delays the host's reads by more than the grace):
	// work that sends progress often shows going on as more than one.
	// Progress that arrived before an answer after the grace was written
	// before it: only what came after the answer shows the work going on.
	from := c.afterGrace.progress
	if c.answeredIn > c.grace {
		from = max(from, c.progressAtAnswer)
	}
	if n := c.end.progress - from; n >= 2 || n == 1 && (g.ProgressEvery == 0 || 2*g.ProgressEvery > window) {
		went = append(went, fmt.Sprintf("%d progress notifications for id=%d arrived %v–%v after the cancel", n, c.p.ID(), c.grace, c.grace+window.Round(time.Millisecond)))
	}
	cpu := cpuRule{working: g.Demand, after: -1, background: c.background}
	if c.end.visible && c.afterGrace.visible && window > 0 {
		cpu.after = float64(demand(c.afterGrace, c.end)) / float64(window)
		if cpu.wentOn() {
			went = append(went, fmt.Sprintf("the server used %v of CPU (%.0f%%) in the %v after the grace%s", demand(c.afterGrace, c.end).Round(time.Millisecond), 100*cpu.after, window.Round(time.Millisecond), c.backgroundNote()))
		}
	}
	if len(c.started) > 0 {
		went = append(went, fmt.Sprintf("processes it started for the call are still running %v after the cancel: %s", (c.grace+window).Round(time.Millisecond), procList(c.started)))
	}
	resp := c.response()
	answer := ""
	if resp != nil {
		answer = fmt.Sprintf("the cancelled request was answered %s after the cancel with %s", roundMS(c.answeredIn), resp)
	}
	if c.answeredIn > c.grace && resp != nil && resp.Error == nil && !isErrorResult(resp) {
		went = append(went, fmt.Sprintf("the cancelled request was answered %s after the cancel with a result of %d bytes, not an error: its work ran to the end", roundMS(c.answeredIn), len(resp.Result)))
		answer = ""
	}
	if len(went) > 0 {
		ev := "work went on after notifications/cancelled: " + strings.Join(went, "; ")
		if answer != "" {
			ev += "; " + answer
		}
		return Outcome{Verdict: WentOn, Evidence: ev, Response: resp}
	}
	var stopped []string
	if g.ProgressEvery > 0 && window >= 3*g.ProgressEvery {
		stopped = append(stopped, fmt.Sprintf("no progress in the %v after the grace (at work it sent one every %v)", window.Round(time.Millisecond), g.ProgressEvery.Round(time.Millisecond)))
	}
	if cpu.stopped() {
		stopped = append(stopped, fmt.Sprintf("its CPU use fell from %.0f%% to %.0f%%%s", 100*g.Demand, 100*cpu.after, c.backgroundNote()))
	}
	// Asleep is evidence only against work that showed itself at work.
	if c.rule != nil && (g.ProgressEvery > 0 || g.Demand >= 0.10 || len(g.Procs) > 0) {
		stopped = append(stopped, "the server "+c.rule.String())
	}
	if len(g.Procs) > 0 && c.end.visible && len(c.started) == 0 {
		stopped = append(stopped, fmt.Sprintf("none of the processes the call starts (%d while at work) is left running", len(g.Procs)))
	}
	if answer == "" && callDuration > 0 && c.grace+window >= callDuration {
		stopped = append(stopped, fmt.Sprintf("no response within the call's own duration (%v)", callDuration))
	}
	if answer != "" {
		// What is required is that the work stops; the answer is a SHOULD
		// NOT (a MUST NOT in 2026-07-28), and a response already being
		// written when the cancel came is a race the host must tolerate.
		must := "the specification says SHOULD NOT"
		if wire.IsModern(era) {
			must = "the 2026-07-28 stdio transport says MUST NOT"
		}
		if len(stopped) > 0 {
			return Outcome{Verdict: StoppedAnswered, Response: resp, Evidence: fmt.Sprintf("the work stopped: %s; but %s — %s", strings.Join(stopped, "; "), answer, must)}
		}
		cpuWhy := fmt.Sprintf("its CPU use could not be told from idle (%s)", g)
		if cpu.masked() {
			cpuWhy = cpu.maskedWhy()
		}
		return Outcome{Verdict: Unverified, Response: resp, Evidence: fmt.Sprintf("unverified: %s (%s), and nothing showed whether the work stopped or went on: the call sent no progress and %s", answer, must, cpuWhy)}
	}
	if len(stopped) > 0 {
		return Outcome{Verdict: Stopped, Evidence: fmt.Sprintf("the work stopped: %s; no response", strings.Join(stopped, "; "))}
	}
	why := []string{"the call sent no progress"}
	if !c.end.visible {
		why = append(why, "its CPU time and processes cannot be seen ("+invisibleWhy(c.s)+")")
	} else if cpu.masked() {
		why = append(why, cpu.maskedWhy())
	} else if g.Demand >= 0.10 && cpu.after >= 0 {
		why = append(why, fmt.Sprintf("its CPU use after the grace (%.0f%%) neither kept half of its use at work (%s) nor fell to a fifth of it", 100*cpu.after, g))
	} else {
		why = append(why, fmt.Sprintf("used little CPU at work (%s)", g))
	}
	return Outcome{Verdict: Unverified, Evidence: fmt.Sprintf("unverified: nothing arrived within %v of the cancel, but nothing showed the work running either: %s",
		(c.grace + window).Round(time.Millisecond), strings.Join(why, ", "))}
}

// backgroundNote says, where the server used CPU before the call, how far
// above that the evidence is: ", 120% above its own 28% before the call".
func (c *Seen) backgroundNote() string {
	if c.background < 0.05 {
		return ""
	}
	return fmt.Sprintf(" (the server's own use before the call: %.0f%%)", 100*c.background)
}

// maskedWhy says that the server's own background use hid the call's.
func (r cpuRule) maskedWhy() string {
	at := "the call's demand at work was not seen"
	if r.working >= 0 {
		at = fmt.Sprintf("%.0f%% at work", 100*r.working)
	}
	return fmt.Sprintf("its CPU use (%s, %.0f%% after the grace) could not be told from the server's own use before the call (%.0f%%)", at, 100*r.after, 100*r.background)
}

// isErrorResult reports whether a tools/call result says isError.
func isErrorResult(r *mcptest.Response) bool {
	return string(wire.Member(r.Result, "isError")) == "true"
}

// roundMS writes d to the millisecond, or "under 1ms".
func roundMS(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1ms"
	}
	return d.Round(time.Millisecond).String()
}
