package replay_test

import (
	"bytes"
	"testing"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
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
	s.StallReads()
	big := s.Send("tools/call", call(fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 1 << 20}.Map()))
	if err := s.WaitWriterBlocked(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "block of the host's stdout", func(e proxy.Event) bool { return e.Ev == proxy.EvBlock && e.Dir == proxy.DirOut })
	slow := s.Send("tools/call", call(fakeserver.ToolSlow, map[string]any{"steps": 2, "intervalMs": 200}))
	rec.wait(t, "slow call forwarded", func(e proxy.Event) bool {
		return e.Ev == proxy.EvChunk && e.Dir == proxy.DirIn && e.WT > 0 && bytes.Contains([]byte(e.Data), []byte(fakeserver.ToolSlow))
	})
	if err := slow.Cancel("the host gave up"); err != nil {
		t.Fatal(err)
	}
	rec.wait(t, "cancel", func(e proxy.Event) bool { return e.Ev == proxy.EvCancel })
	s.ResumeReads()
	wait(t, big)
	if _, err := s.CallTool(ctxFor(t), fakeserver.ToolEcho, map[string]any{"text": "after"}); err != nil {
		t.Fatal(err)
	}
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
			b := record(t, recordConfig(), tc.args, tc.host)
			rec, err := replay.Read(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := mcptest.Replay(ctxFor(t), mcptest.Helper("fake", tc.args...), rec)
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
