package replay_test

import (
	"bytes"
	"cmp"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// TestExitJudgedByEvidence: the server's exit after its stdin closes is
// judged by the one rule, not by the replay's bound. A server still busy
// ending when the bound passes (a loaded machine; here a shell spinning
// after the fake exits) is watched until it exits, with no departure (or,
// still busy when the watch ends, unchecked); one that keeps running
// asleep is reported missing with the evidence.
func TestExitJudgedByEvidence(t *testing.T) {
	t.Parallel()
	rec, err := replay.Read(bytes.NewReader(sharedRecord(t, "calls", calls)))
	if err != nil {
		t.Fatal(err)
	}
	testkit.AtOnce(t, testkit.Subtest{Name: "busy", F: func(t *testing.T) {
		ctx, cancel := context.WithCancel(ctxFor(t))
		defer cancel()
		fake, err := fakeCommand(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// The fake, then a million rounds of a shell loop: busy for a
		// second or more after stdin closes, far past the replay's bound
		// of 100 ms plus twice the recorded exit.
		spin := `"$0" "$@"; i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done`
		cmd := exec.Command("sh", append([]string{"-c", spin, fake.Path}, fake.Args[1:]...)...)
		cmd.Env = fake.Env
		rep, err := replay.Host(ctxFor(t), mcptest.Exec(cmd), rec, replay.Same(), replay.Patience(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		// Watched until it exits, it has no departure; still busy when the
		// watch of 20 s ends (a loaded machine gives the spin a fraction of
		// a core), its exit is unchecked, busy: never missing.
		for _, d := range rep.Departures {
			if d.Method == "exit" && (d.Kind != replay.Unchecked || !strings.Contains(d.Text, "still running and busy")) {
				t.Errorf("a server busy ending past the bound is reported: %s", d)
			}
		}
	}}, testkit.Subtest{Name: "asleep", F: func(t *testing.T) {
		rep, err := replay.Host(ctxFor(t), fakeTarget(t, "-ignore-eof"), rec, replay.Same(), replay.Patience(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		var exit *replay.Departure
		for i, d := range rep.Departures {
			if d.Method == "exit" {
				exit = &rep.Departures[i]
			}
		}
		if exit == nil || exit.Kind != replay.Missing || !strings.Contains(exit.Text, "had not ended, and it stopped") {
			t.Fatalf("a server that keeps running asleep after stdin closed: want a missing exit with the evidence, got %v", exit)
		}
		t.Log(exit)
	}})
}

// TestStallJudgedByEvidence: a server slow to reach a recorded stall's
// state, busy all the while (here the fake behind a shell that relays its
// stdout a byte at a time), is watched past the replay's bound until it
// blocks writing, as the recorded one did: slow is not "not blocking".
func TestStallJudgedByEvidence(t *testing.T) {
	t.Parallel()
	rec, err := replay.Read(bytes.NewReader(sharedRecord(t, "stall-cancel-resume", stallCancelResume)))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), relayed(t, ""), rec, replay.Same(), replay.Patience(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stalls) == 0 || rep.Count(replay.StallNotBlocking) > 0 {
		t.Fatalf("a slow, busy server: want the stall verified, not a stall-not-blocking departure: %s", rep)
	}
	for _, c := range rep.Stalls {
		if c.Outcome != replay.StallVerified && c.Outcome != replay.StallUnverifiable {
			t.Errorf("stall %s", c)
		}
	}
	t.Log(rep)
}

// TestSlowServerNotMissing: a server whose output keeps arriving, a line
// every 100ms behind a shell relay, long past what eight bounds of the
// replay's patience once allowed (1.6 s for 2.4 s of output), is waited for
// while it sends: nothing is missing, everything is checked.
func TestSlowServerNotMissing(t *testing.T) {
	t.Parallel()
	rec, err := replay.Read(bytes.NewReader(recordSession(t, recordConfig(), nil, func(t *testing.T, s *mcptest.Session, _ *sink) {
		p := s.Send("tools/call", map[string]any{
			"name": fakeserver.ToolSlow, "arguments": map[string]any{"steps": 24, "intervalMs": 0},
			"_meta": map[string]any{"progressToken": "slow"},
		})
		wait(t, p)
	})))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), relayed(t, "sleep 0.1"), rec, replay.Same(), replay.Patience(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() != nil || rep.Count(replay.Unchecked) > 0 {
		t.Errorf("a slow server still sending: want no departure, got: %s", rep)
	}
	t.Log(rep)
}

// relayed is the fake behind a shell relay that passes its stdout on a
// line at a time (a slow, busy server), running then after each line.
func relayed(t *testing.T, then string) mcptest.Target {
	t.Helper()
	fake, err := fakeCommand(ctxFor(t))
	if err != nil {
		t.Fatal(err)
	}
	relay := `"$0" "$@" | while IFS= read -r line; do printf '%s\n' "$line"; ` + cmp.Or(then, ":") + `; done`
	cmd := exec.Command("sh", append([]string{"-c", relay, fake.Path}, fake.Args[1:]...)...)
	cmd.Env = fake.Env
	return mcptest.Exec(cmd)
}
