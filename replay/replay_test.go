package replay_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/record"
	"github.com/mcpstdio/mcpstdio/replay"
)

// Host scripts: what mcptest does as the recorded host.

// calls: a few calls, one with a response larger than the pipes.
func calls(t *testing.T, s *mcptest.Session, _ *sink) {
	t.Helper()
	ctx := ctxFor(t)
	if _, err := s.CallTool(ctx, fakeserver.ToolEcho, map[string]any{"text": "hello"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(ctx, fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 300 << 10}.Map()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CallTool(ctx, fakeserver.ToolSearch, map[string]any{"query": "x"}); err != nil {
		t.Fatal(err)
	}
}

// stallCancelResume: the host stops reading, a large response blocks the
// server, the host sends a slow call and cancels it, resumes, and checks
// the session still answers.
func stallCancelResume(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	stallCancel(1<<20)(t, s, rec)
}

// stallCancel is stallCancelResume with a response of size bytes.
func stallCancel(size int) func(*testing.T, *mcptest.Session, *sink) {
	return func(t *testing.T, s *mcptest.Session, rec *sink) {
		t.Helper()
		stallCancelSized(t, s, rec, size)
	}
}

func stallCancelSized(t *testing.T, s *mcptest.Session, rec *sink, size int) {
	t.Helper()
	s.StallReads()
	big := s.Send("tools/call", call(fakeserver.ToolBig, fakeserver.BigArgs{Bytes: size}.Map()))
	if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "block of the host's stdout", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirOut })
	slow := s.Send("tools/call", call(fakeserver.ToolSlow, map[string]any{"steps": 2, "intervalMs": 200}))
	rec.wait(t, "slow call forwarded", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 && bytes.Contains([]byte(e.Data), []byte(fakeserver.ToolSlow))
	})
	if err := slow.Cancel("the host gave up"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "cancel", func(e record.Event) bool { return e.Ev == record.EvCancel })
	s.ResumeReads()
	wait(t, big)
	if _, err := s.CallTool(ctxFor(t), fakeserver.ToolEcho, map[string]any{"text": "after"}); err != nil {
		t.Fatal(err)
	}
}

// cancelLast: the host's last act is to cancel a slow call; it then
// closes stdin. A server that answers the cancelled call answers after
// every message of the record.
func cancelLast(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	slow := s.Send("tools/call", call(fakeserver.ToolSlow, map[string]any{"steps": 4, "intervalMs": 100}))
	rec.wait(t, "slow call forwarded", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.WT > 0 && bytes.Contains([]byte(e.Data), []byte(fakeserver.ToolSlow))
	})
	if err := slow.Cancel("the host gave up"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "cancel", func(e record.Event) bool { return e.Ev == record.EvCancel })
}

// flood: one call whose progress notifications come by the thousand.
func flood(t *testing.T, s *mcptest.Session, _ *sink) {
	t.Helper()
	p := s.Send("tools/call", map[string]any{
		"name": fakeserver.ToolSlow, "arguments": map[string]any{"steps": 3000, "intervalMs": 0},
		"_meta": map[string]any{"progressToken": "flood"},
	})
	wait(t, p)
	if n := p.Progress(); n != 3000 {
		t.Fatalf("%d progress notifications, want 3000", n)
	}
}

// TestReplaySameServer: sessions recorded through the proxy replay against
// the same server with no departure, each message checked.
func TestReplaySameServer(t *testing.T) {
	t.Parallel() // it waits (the fake, the patience): side by side with the other waiting tests
	for _, tc := range []struct {
		name string
		args []string
		host func(*testing.T, *mcptest.Session, *sink)
	}{
		{"calls", nil, calls},
		{"calls-naive", []string{"-naive"}, calls},
		{"stall-cancel-resume", nil, stallCancelResume},
		{"stall-cancel-resume-naive", []string{"-naive"}, stallCancelResume},
		{"flood", nil, flood},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b []byte
			switch tc.name {
			case "calls", "stall-cancel-resume": // as other tests record it
				b = sharedRecord(t, tc.name, tc.host)
			default:
				b = recordSession(t, recordConfig(), tc.args, tc.host)
			}
			rec, err := replay.Read(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replay.Host(ctxFor(t), fakeTarget(t, tc.args...), rec, replay.Same())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Departures) > 0 {
				t.Errorf("replay against the same server: %s", rep)
			}
			if rep.Checked != len(rec.Server) {
				t.Errorf("%d messages checked, want all %d the server sent", rep.Checked, len(rec.Server))
			}
			t.Log(rep)
		})
	}
}

// stallSearch: the host stops reading while a search answers; with the
// fake's unbounded search the answer blocks the server.
func stallSearch(t *testing.T, s *mcptest.Session, rec *sink) {
	t.Helper()
	s.StallReads()
	p := s.Send("tools/call", call(fakeserver.ToolSearch, map[string]any{"query": "x", "total": 20000}))
	if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "block of the host's stdout", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirOut })
	s.ResumeReads()
	wait(t, p)
}

// TestReplayDepartures: a record replayed against a changed server
// reports each kind of departure, where it happened.
func TestReplayDepartures(t *testing.T) {
	t.Parallel() // it waits (the patience, the fake): side by side with the other waiting tests
	for _, tc := range []struct {
		name        string
		recordArgs  []string
		host        func(*testing.T, *mcptest.Session, *sink)
		replayArgs  []string
		kind        replay.Kind
		method      string
		recordedSeq bool // the departure names a recorded event
	}{
		// The recorded server answered a cancelled call; this one does not.
		{"missing", []string{"-respond-after-cancel"}, stallCancelResume, nil, replay.Missing, "tools/call", true},
		// The recorded naive server answered the call it could not see
		// cancelled; the good one honours the cancel.
		{"missing-naive-fixed", []string{"-naive"}, stallCancelResume, nil, replay.Missing, "tools/call", true},
		// This server answers a call after its cancel.
		{"extra", nil, stallCancelResume, []string{"-respond-after-cancel"}, replay.Extra, "tools/call", false},
		// This server answers the cancelled call, after the last message
		// the recorded server sent.
		{"extra-after-the-last", nil, cancelLast, []string{"-respond-after-cancel"}, replay.Extra, "tools/call", false},
		// This server writes a banner on stdout.
		{"extra-junk", nil, calls, []string{"-banner", "hello from the server"}, replay.Extra, "", false},
		// This server has no echo tool.
		{"different", nil, calls, []string{"-tools", "big,search,slow"}, replay.Different, "tools/call", true},
		// The recorded search returned everything and blocked the server
		// while the host did not read; this one returns a page.
		{"stall-not-blocking", []string{"-unbounded"}, stallSearch, nil, replay.StallNotBlocking, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var b []byte
			switch {
			case tc.recordArgs == nil && tc.name == "extra": // as other tests record it
				b = sharedRecord(t, "stall-cancel-resume", tc.host)
			case tc.recordArgs == nil && (tc.name == "extra-junk" || tc.name == "different"):
				b = sharedRecord(t, "calls", tc.host)
			default:
				b = recordSession(t, recordConfig(), tc.recordArgs, tc.host)
			}
			rec, err := replay.Read(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			// A Missing departure waits the patience out: a short one for
			// those, a second for the rest, whose messages come (on a
			// loaded machine, late).
			patience := time.Second
			if tc.kind == replay.Missing {
				patience = 200 * time.Millisecond
			}
			rep, err := replay.Host(ctxFor(t), fakeTarget(t, tc.replayArgs...), rec, replay.Same(), replay.Patience(patience))
			if err != nil {
				t.Fatal(err)
			}
			if rep.Err() == nil {
				t.Fatalf("no departure reported: %s", rep)
			}
			var found *replay.Departure
			for i, d := range rep.Departures {
				if d.Kind == tc.kind && (tc.method == "" || d.Method == tc.method) {
					found = &rep.Departures[i]
					break
				}
			}
			if found == nil {
				t.Fatalf("no %s departure (method %q): %s", tc.kind, tc.method, rep)
			}
			if tc.recordedSeq && found.Seq < 0 || !tc.recordedSeq && found.Seq != -1 {
				t.Errorf("departure %v: Seq %d, want %s", found, found.Seq, map[bool]string{true: "a recorded event's", false: "-1 (extra)"}[tc.recordedSeq])
			}
			if found.Kind == replay.Different && found.Diff == "" {
				t.Errorf("a Different departure without its diff: %v", found)
			}
			t.Log(rep)
		})
	}
}

// loseDetail returns the record b as the proxy writes it when its observer
// falls behind during the out chunks [from, to): their data and the frames
// in them are lost, and one frame marked Gap stands for the bytes from the
// first lost line to the next newline seen.
func loseDetail(t *testing.T, b []byte, from, to int) []byte {
	t.Helper()
	var evs []record.Event
	if err := record.Read(bytes.NewReader(b), func(e record.Event) error { evs = append(evs, e); return nil }); err != nil {
		t.Fatal(err)
	}
	var lo, hi int64 = -1, -1
	k := 0
	for i := range evs {
		if e := &evs[i]; e.Ev == record.EvChunk && e.Dir == record.DirOut {
			if k >= from && k < to {
				if lo < 0 {
					lo = e.Off
				}
				hi = e.Off + e.N
				e.Data, e.B64, e.Gap = "", nil, true
			}
			k++
		}
	}
	if k < to {
		t.Fatalf("the record has %d out chunks, want more than %d", k, to)
	}
	// As the proxy's frame assembler does: the line in progress when the
	// loss began (or the first one in it) grows to the first newline seen
	// after it, marked Gap; the lines wholly in the loss are not seen.
	var out bytes.Buffer
	start, done := int64(-1), false
	for _, e := range evs {
		if e.Ev == record.EvFrame && e.Dir == record.DirOut && !done && e.Off+e.N+1 > lo {
			if start < 0 {
				start = min(e.Off, lo)
			}
			if e.Off+e.N+1 <= hi {
				continue
			}
			e = record.Event{Seq: e.Seq, T: e.T, Ev: record.EvFrame, Dir: record.DirOut, Off: start, N: e.Off + e.N - start, Gap: true}
			done = true
		}
		line, _ := json.Marshal(e)
		out.Write(append(line, '\n'))
	}
	return out.Bytes()
}

// TestLostDetail: a record whose proxy lost detail in a flood (its
// observer fell behind) replays against the same server: what came in the
// lost part is not checked, the rest is, and nothing is called extra or
// different.
func TestLostDetail(t *testing.T) {
	// Its flood replayed beside the tests that compute found thousands of
	// extra notifications now and then (1 in 4): the record's end was lost
	// when the proxy's observer ran out of ExitGrace (recordConfig gives
	// it 30 s; such a loss is now a drop and a gap frame in the record:
	// proxy's TestEndLostAtExitMarked).
	t.Parallel()
	b := recordSession(t, recordConfig(), nil, flood)
	full, err := replay.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range full.Chunks {
		if c.Dir == record.DirOut {
			n++
		}
	}
	rec, err := replay.Read(bytes.NewReader(loseDetail(t, b, n/3, 2*n/3)))
	if err != nil {
		t.Fatal(err)
	}
	gaps, whole := 0, 0
	for _, f := range rec.Server {
		switch {
		case f.Gap:
			gaps++
		case f.Whole():
			whole++
		}
	}
	if gaps != 1 || whole >= len(full.Server)-1 {
		t.Fatalf("the record with lost detail has %d gaps and %d of %d frames whole, want 1 gap and frames lost", gaps, whole, len(full.Server))
	}
	rep, err := replay.Host(ctxFor(t), fakeTarget(t), rec, replay.Same())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Err() != nil || rep.Count(replay.Unchecked) != 1 || len(rep.Notes) == 0 {
		t.Errorf("want no departure, the gap unchecked and a note of what came in it: %s", rep)
	}
	if rep.Checked != whole {
		t.Errorf("%d messages checked, want the %d the record has whole", rep.Checked, whole)
	}
	t.Log(rep)
}
