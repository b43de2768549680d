package replay

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/term"
)

// Verdict is how the server under test fared on a rule at one place of the
// record.
type Verdict string

// Verdicts of a Finding.
const (
	Pass Verdict = "pass"
	// Warn: the rule held as the criteria allow, short of what the spec
	// asks (a cancelled request answered all the same).
	Warn Verdict = "warn"
	Fail Verdict = "fail"
	// Unverified: the evidence the rule needs could not be seen (another
	// system, an in-process server), or the server was still busy when
	// the replay's bound ran out: slow, not stopped. Not a failure but
	// under Strict.
	Unverified Verdict = "unverified"
)

// The rules a replay judges by default, as the criteria of package
// assertions judge them (Finding.Rule).
const (
	// RuleReadsWhileBlocked: where the recorded host stopped reading and
	// wrote meanwhile (requests, cancels), the server must go on taking
	// its stdin while its stdout is blocked; one that stops, with the
	// host's bytes waiting in its stdin pipe and a thread blocked writing
	// stdout, fails, with that evidence.
	RuleReadsWhileBlocked = "reads-while-blocked"
	// RuleAnswered: every request the host sent and did not cancel is
	// answered. One not answered when the replay ends fails if the server
	// ended, or is stopped by the one rule (nothing taken or written, no
	// CPU demand); a server still busy then is unverified.
	RuleAnswered = "answered"
)

// Finding is one judgement of a rule on the server under test, at a place
// of the record.
type Finding struct {
	Rule    string
	Verdict Verdict
	// Seq is the record event it is about: the stall's, the request's
	// frame, the cancel's frame. T is its recorded time.
	Seq    int64
	T      time.Duration
	Method string          // the request's method, if it is about one
	ID     json.RawMessage // its recorded id
	Text   string          // what was seen, with the evidence
}

// String formats the finding on one line, control characters from the
// record or the server escaped: "FAIL reads-while-blocked at seq 41
// (+1.203s): …".
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s at seq %d (+%v)", strings.ToUpper(string(f.Verdict)), f.Rule, f.Seq, f.T.Round(time.Millisecond))
	if f.Method != "" {
		fmt.Fprintf(&b, " %s", term.Line(f.Method))
	}
	if len(f.ID) > 0 {
		fmt.Fprintf(&b, " id=%s", term.Line(string(f.ID)))
	}
	fmt.Fprintf(&b, ": %s", term.Line(f.Text))
	return b.String()
}

// Unplayed is something the record holds that a replay did not play, and
// why: a request or cancel the record has only the head of, a fault of
// the proxy that a replay cannot play. A stall not played is a StallCheck
// with StallSkipped.
type Unplayed struct {
	Seq  int64  // its record event
	What string // "request", "cancel", "notification", "fault"
	Why  string
}

// String formats it on one line.
func (u Unplayed) String() string {
	return fmt.Sprintf("not played: %s at seq %d: %s", term.Line(u.What), u.Seq, term.Line(u.Why))
}
