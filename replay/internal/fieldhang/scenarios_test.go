package fieldhang_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// The field hangs of replay/testdata (made by replay's TestMakeScenarios:
// the naive fake through the proxy), each replayed by the rules against the
// server that hung and against the fixed one.
var scenarios = []struct {
	name    string
	rule    string // the rule the naive fake fails
	faultAt int64  // where the proxy's stop fault stopped reading stdout, if it has one
}{
	// The host stops reading in a 1 MiB result for a second, then
	// cancels it and pings (Claude Code, 27 s).
	{"host-stall", replay.RuleReadsWhileBlocked, 0},
	// The proxy stops reading stdout (out:stop) 200 KiB into a 1 MiB
	// result for 3 s; the host calls echo, then cancels both calls
	// (Codex, 45 s).
	{"fault-stall", replay.RuleReadsWhileBlocked, 200 << 10},
	// The host cancels a slow call after its second progress
	// notification, and pings.
	{"cancel-slow", replay.RuleCancel, 0},
}

// fake is the fake as a helper child, built without the race detector
// under it (testkit.WithoutRace): its cost there checks nothing of the
// replay's.
func fake(ctx context.Context, args ...string) (mcptest.Target, error) {
	cmd, err := mcptest.HelperCommand(ctx, "fake", args...)
	if err != nil {
		return nil, err
	}
	if cmd, err = testkit.WithoutRace(ctx, cmd); err != nil {
		return nil, err
	}
	return mcptest.Exec(cmd), nil
}

// played is one replay of TestScenarios: its record and its report.
type played struct {
	rec *replay.Record
	rep *replay.Report
	err error
}

// TestScenarios: each field hang's record, replayed by the rules, fails on
// the naive fake (the server that hung), its first line naming the rule
// and where in the record, and passes on the fake (the fixed server). The
// proxy's stop fault is played as a stall of the host's reads, at the byte
// where the proxy stopped reading.
//
// The six replays mostly wait (the fake's pace, the record's stalls) and
// are judged by the rules, not by timing, so all six run at once, whatever
// -parallel says: at go test's one per CPU they took 12 s of a -race run
// for 3 s of CPU.
func TestScenarios(t *testing.T) {
	t.Parallel() // it waits (six replays side by side): beside TestFieldHangRedOnTheHang
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	runs := map[string]*played{}
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		for _, naive := range []bool{true, false} {
			var args []string
			if naive {
				args = []string{"-naive"}
			}
			p := &played{}
			runs[name(sc.name, naive)] = p
			wg.Add(1)
			go func() {
				defer wg.Done()
				if p.rec, p.err = replay.Load(filepath.Join("..", "..", "testdata", sc.name+".ndjson")); p.err != nil {
					return
				}
				target, err := fake(ctx, args...)
				if err != nil {
					p.err = err
					return
				}
				p.rep, p.err = replay.Host(ctx, target, p.rec)
			}()
		}
	}
	wg.Wait()
	for _, sc := range scenarios {
		for _, naive := range []bool{true, false} {
			t.Run(name(sc.name, naive), func(t *testing.T) {
				p := runs[name(sc.name, naive)]
				if p.err != nil {
					t.Fatal(p.err)
				}
				rec, rep := p.rec, p.rep
				for i, st := range rec.Stalls {
					if st.Fault != "" && (st.At != sc.faultAt || rep.Stalls[i].Outcome == replay.StallSkipped) {
						t.Errorf("the fault's stall at stdout byte %d, %s; want it at %d, played", st.At, rep.Stalls[i], sc.faultAt)
					}
				}
				head, _, _ := strings.Cut(rep.String(), "\n")
				switch {
				case naive && (rep.Err() == nil || !strings.HasPrefix(head, "replay: FAIL "+sc.rule+" at seq ")):
					t.Errorf("the server that hung: want a failure of %s named in the first line, got:\n%s", sc.rule, rep)
				case !naive && rep.Err() != nil:
					t.Errorf("the fixed server: want a pass, got:\n%s", rep)
				default:
					t.Log(rep)
				}
			})
		}
	}
}

// name is a replay's subtest: the scenario, then naive (the server that
// hung) or fixed.
func name(scenario string, naive bool) string {
	if naive {
		return scenario + "/naive"
	}
	return scenario + "/fixed"
}

// failures is a testing.TB that keeps the test's errors instead of
// failing it, for a replay that must fail.
type failures struct {
	*testing.T
	mu   sync.Mutex
	errs []string
}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
