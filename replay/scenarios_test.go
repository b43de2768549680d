package replay_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
)

// The three field hangs, as records of the naive fake (the server that
// hangs) made through the proxy, redacted, in testdata; TestMakeScenarios
// writes them. Replayed by the rules each fails on the naive fake, naming
// the rule, and passes on the fake (the fixed server): internal/fieldhang's
// TestScenarios, in a package of its own so that its waits run beside
// this package's.

// scenario is a field hang: its record in testdata, the host that made it,
// the proxy's faults, and the rule the naive fake fails.
type scenario struct {
	name   string
	host   hostFunc
	faults []record.Fault
	rule   string
}

var scenarios = []scenario{
	// The host stops reading in the middle of a large result, then
	// cancels it and pings (Claude Code, 27 s).
	{"host-stall", hostStallCancelPing, nil, replay.RuleReadsWhileBlocked},
	// The proxy stops reading the server's stdout (out:stop) during a
	// large result; the host times out and cancels it, calls echo and
	// cancels that too (Codex, 45 s).
	{"fault-stall", faultStallCancels, []record.Fault{{
		Dir: record.DirOut, Kind: "stop", AfterBytes: 200 << 10, For: record.Duration(3 * time.Second),
	}}, replay.RuleReadsWhileBlocked},
	// The host cancels a slow call while it works, and pings.
	{"cancel-slow", cancelSlowPing, nil, replay.RuleCancel},
}

func (sc scenario) file() string { return filepath.Join("testdata", sc.name+".ndjson") }

// scenarioRedact is how the scenarios' records are redacted: the large
// results' text hashed.
var scenarioRedact = replay.Redact("result.content.*.text")

// hostStallCancelPing: the host stops reading while a 1 MiB result blocks
// the server, cancels it, pings, and reads on.
func hostStallCancelPing(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	s.StallReads()
	stalledAt := time.Now()
	big := s.Send("tools/call", call(fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 1 << 20}.Map()))
	if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "block of the host's stdout", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirOut })
	if err := big.Cancel("the host gave up"); err != nil {
		t.Fatal(err)
	}
	ping := s.Send("ping", nil)
	rec.wait(t, "cancel", func(e record.Event) bool { return e.Ev == record.EvCancel })
	rec.wait(t, "ping forwarded", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 && bytes.Contains([]byte(e.Data), []byte(`"ping"`))
	})
	// The host stays stopped a second in all (the field's was 27 s): long
	// enough for a replay to judge the server in it.
	<-time.After(time.Until(stalledAt.Add(time.Second)))
	s.ResumeReads()
	wait(t, ping)
}

// faultStallCancels: while the proxy's fault holds the server's stdout,
// the host calls echo, then cancels both calls.
func faultStallCancels(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	big := s.Send("tools/call", call(fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 1 << 20}.Map()))
	rec.wait(t, "the fault's stop", func(e record.Event) bool { return e.Ev == record.EvFault })
	echo := s.Send("tools/call", call(fakeserver.ToolEcho, map[string]any{"text": "are you there"}))
	rec.wait(t, "echo forwarded", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 && bytes.Contains([]byte(e.Data), []byte(fakeserver.ToolEcho))
	})
	for _, p := range []*mcptest.Pending{big, echo} {
		if err := p.Cancel("timed out"); err != nil {
			t.Fatal(err)
		}
	}
	rec.wait(t, "the second cancel", func(e record.Event) bool { return e.Ev == record.EvCancel && bytes.Equal(e.ID, echoID(echo)) })
	rec.wait(t, "the fault's end", func(e record.Event) bool { return e.Ev == record.EvFault && strings.HasPrefix(e.Text, "reading") })
	if err := s.Ping(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
}

// cancelSlowPing: the host cancels a slow call after its second progress
// notification, and pings.
func cancelSlowPing(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	slow := s.Send("tools/call", map[string]any{
		"name": fakeserver.ToolSlow, "arguments": map[string]any{"steps": 20, "intervalMs": 100},
		"_meta": map[string]any{"progressToken": "slow"},
	})
	for slow.Progress() < 2 {
		select {
		case <-s.Changed():
		case <-ctxFor(t).Done():
			t.Fatal("no progress")
		}
	}
	if err := slow.Cancel("the user pressed stop"); err != nil {
		t.Fatal(err)
	}
	ping := s.Send("ping", nil)
	rec.wait(t, "cancel", func(e record.Event) bool { return e.Ev == record.EvCancel })
	wait(t, ping)
}

// TestMakeScenarios writes the scenarios' records to testdata: each made
// through the proxy in front of the naive fake, then redacted.
// REPLAY_WRITE_SCENARIOS=1 go test -run TestMakeScenarios ./replay
func TestMakeScenarios(t *testing.T) {
	if os.Getenv("REPLAY_WRITE_SCENARIOS") == "" {
		t.Skip("writes testdata: set REPLAY_WRITE_SCENARIOS=1")
	}
	// And a 15 MiB result of the fixed fake, for TestRedactedStrict.
	big := scenario{name: "big-redacted", host: bigCalls(1, 15<<20)}
	for _, sc := range append(scenarios, big) {
		cfg := recordConfig()
		cfg.BlockEvent, cfg.Faults = proxy.DefaultBlockEvent, sc.faults
		args := []string{"-naive"}
		if sc.name == big.name {
			args = nil
		}
		b := recordSession(t, cfg, args, sc.host)
		rec, err := replay.Read(bytes.NewReader(b), scenarioRedact)
		if err != nil {
			t.Fatal(err)
		}
		// What the header says of the machine it was made on.
		h := rec.Events[0].Header
		h.Argv, h.Cwd, h.EnvKeys, h.Proxy = append([]string{"mcpstdio", "fake"}, args...), "", []string{"HOME", "PATH"}, "0.1.0"
		var out bytes.Buffer
		if err := rec.Write(&out); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sc.file(), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d bytes, %d stalls", sc.file(), out.Len(), len(rec.Stalls))
	}
}

// echoID is p's id as JSON.
func echoID(p *mcptest.Pending) []byte { return strconv.AppendInt(nil, p.ID(), 10) }

// TestFaultsNotPlayed: a fault of the proxy that a replay cannot play (it
// stopped the server process, or changed what reached it) is listed, with
// why, and counted in the first line.
func TestFaultsNotPlayed(t *testing.T) {
	t.Parallel()
	b := sharedRecord(t, "calls", calls)
	var out bytes.Buffer
	for i, line := range bytes.SplitAfter(b, []byte("\n")) {
		out.Write(line)
		if i == 1 { // after the spawn event
			out.WriteString(`{"seq":1000,"t":5000,"ev":"fault","text":"stopped the server (SIGSTOP) for 1s","fault":{"kind":"sigstop","for":"1s"}}` + "\n")
			out.WriteString(`{"seq":1001,"t":5000,"ev":"fault","dir":"in","text":"in effect","fault":{"dir":"in","kind":"withhold-cancel"}}` + "\n")
		}
	}
	rec, err := replay.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Strict())
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(rep.String(), "\n", 2)[0]
	if len(rep.Unplayed) != 2 || !strings.Contains(head, "not played: 2 faults") || rep.Err() == nil {
		t.Errorf("want the two faults listed as not played, counted in the first line, and a Strict failure: %s", rep)
	}
}

// TestAnsweredRule: a request not cancelled that the server never answers
// (here the handshake; the record is cut before the host closed stdin, at
// which the fake would answer it) fails the answered rule once the server
// is seen stopped, with the evidence.
func TestAnsweredRule(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	for _, line := range bytes.SplitAfter(sharedRecord(t, "calls", calls), []byte("\n")) {
		if !bytes.Contains(line, []byte(`"ev":"eof","dir":"in"`)) {
			b.Write(line)
		}
	}
	rec, err := replay.Read(&b)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t, "-no-handshake"), rec, replay.Patience(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	head := strings.SplitN(rep.String(), "\n", 2)[0]
	if rep.Err() == nil || !strings.HasPrefix(head, "replay: FAIL answered at seq ") || !strings.Contains(head, "the server is stopped") {
		t.Errorf("a server that never answers the handshake: want the answered rule failed, with the evidence, in the first line:\n%s", rep)
	}
	t.Log(rep)
}

// TestWaitedWritesInStall: host writes that the proxy read only after a
// stall, but that had waited in its pipe since before (record.Event's
// Waited: the proxy was not reading), are played inside the stall, where
// the reads rule judges them. The record is fault-stall's with its two
// cancels read by the proxy after its fault ended, having waited.
func TestWaitedWritesInStall(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "fault-stall.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	const late = 3_067_000 // µs: after the fault's end (3.0665 s), before the next host write (3.0673 s)
	err = record.Read(bytes.NewReader(b), func(e record.Event) error {
		if e.Dir == record.DirIn && (e.Method == "notifications/cancelled" || e.Ev == record.EvCancel ||
			e.Ev == record.EvChunk && strings.Contains(e.Data, "notifications/cancelled")) {
			e.T, e.T0 = late, 0
			if e.Ev == record.EvFrame {
				e.T0 = late
			}
			if e.Ev == record.EvChunk {
				e.WT, e.Waited, e.RT = late+10, e.N, late-10
			}
		}
		line, err := json.Marshal(e)
		out.Write(append(line, '\n'))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := replay.Read(&out)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t, "-naive"), rec)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() == nil || !strings.Contains(rep.String(), "of the 494 bytes the host wrote (2 writes) while its reads were stopped") {
		t.Errorf("want the waited cancels played in the stall, with the echo: 494 bytes in 2 writes judged there:\n%s", rep)
	}
}
