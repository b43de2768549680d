package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestServeToHost: the server side of a record, played to mcptest as the
// host under test: a host that does what the recorded one did gets the
// recorded answers, under its own ids, and Serve ends with no departure.
func TestServeToHost(t *testing.T) {
	rec, err := replay.Read(bytes.NewReader(sharedRecord(t, "calls", calls)))
	if err != nil {
		t.Fatal(err)
	}
	s := mcptest.StartServer(t, mcptest.InProcess(replay.Serve(rec)))
	ctx := ctxFor(t)
	// A notification the record has not.
	if err := s.Notify("notifications/message", map[string]any{"level": "info"}); err != nil {
		t.Fatal(err)
	}
	echo, err := s.CallTool(ctx, fakeserver.ToolEcho, map[string]any{"text": "hello"})
	if err != nil || echo.Text != "hello" {
		t.Fatalf("echo: %+v, %v; want the recorded answer hello", echo, err)
	}
	big, err := s.CallTool(ctx, fakeserver.ToolBig, fakeserver.BigArgs{Bytes: 300 << 10}.Map())
	if err != nil || len(big.Text) != 300<<10 {
		t.Fatalf("big: %d bytes, %v; want the recorded 300 KiB", len(big.Text), err)
	}
	if _, err := s.CallTool(ctx, fakeserver.ToolSearch, map[string]any{"query": "x"}); err != nil {
		t.Fatal(err)
	}
	// A request the record has not is answered, not left hanging.
	_, err = s.Call(ctx, "resources/list", nil)
	var rpc *wire.RPCError
	if !errors.As(err, &rpc) || rpc.Code != wire.CodeMethodNotFound {
		t.Errorf("a request the record has not: %v, want error -32601", err)
	}
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	ex, err := s.WaitExit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Serve reports what this host did that the recorded one did not.
	if ex.Err == nil || !strings.Contains(ex.Err.Error(), "extra") || !strings.Contains(ex.Err.Error(), "resources/list") || !strings.Contains(ex.Err.Error(), "notifications/message") {
		t.Errorf("Serve's error %v, want the extra request and notification", ex.Err)
	}
	if strings.Contains(ex.Err.Error(), "missing") || strings.Contains(ex.Err.Error(), "different") {
		t.Errorf("Serve's error %v: the host did everything the recorded one did", ex.Err)
	}
}

// TestServeDeparture: a host that sends other arguments, or stops early,
// is reported, and Serve still answers it.
func TestServeDeparture(t *testing.T) {
	rec, err := replay.Read(bytes.NewReader(sharedRecord(t, "calls", calls)))
	if err != nil {
		t.Fatal(err)
	}
	s := mcptest.StartServer(t, mcptest.InProcess(replay.Serve(rec, replay.Patience(200*time.Millisecond))))
	ctx := ctxFor(t)
	echo, err := s.CallTool(ctx, fakeserver.ToolEcho, map[string]any{"text": "bye"})
	if err != nil || echo.Text != "hello" {
		t.Fatalf("echo: %+v, %v; want the recorded answer", echo, err)
	}
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	ex, err := s.WaitExit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	msg := ""
	if ex.Err != nil {
		msg = ex.Err.Error()
	}
	for _, want := range []string{"different", `string("bye")`, "missing"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Serve's error does not say %q:\n%s", want, msg)
		}
	}
}

// TestServeBoundsExtras: a host that sends message after message the
// record has not (here 2,000 pings; 400,000 by hand) gets each answered,
// and the report keeps the latest of them and a count of the rest: its
// memory and its text do not grow with what the host sends.
func TestServeBoundsExtras(t *testing.T) {
	const n = 2000
	rec, err := replay.Read(bytes.NewReader(sharedRecord(t, "calls", calls)))
	if err != nil {
		t.Fatal(err)
	}
	var rep *replay.Report
	s := mcptest.StartServer(t, mcptest.InProcess(replay.Serve(rec, replay.Patience(100*time.Millisecond),
		replay.OnReport(func(r *replay.Report) { rep = r }))))
	ctx := ctxFor(t)
	var pings bytes.Buffer
	for i := range n {
		fmt.Fprintf(&pings, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", 1_000_000+i)
	}
	if err := s.WriteStdin(ctx, pings.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Each is answered -32601: a response to no request mcptest sent.
	for {
		changed := s.Changed() // before the look: a change after it closes this
		if s.Stats().UnknownIDs >= n {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("%d of the %d pings answered", s.Stats().UnknownIDs, n)
		}
	}
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitExit(ctx); err != nil {
		t.Fatal(err)
	}
	if rep == nil {
		t.Fatal("no report")
	}
	text := rep.String()
	if kept := rep.Count(replay.Extra); kept > 100 || kept+rep.ExtraDropped != n {
		t.Errorf("%d extra departures kept and %d counted, want at most 100 kept and %d in all", kept, rep.ExtraDropped, n)
	}
	if len(text) > 64<<10 || !strings.Contains(strings.SplitN(text, "\n", 2)[0], fmt.Sprintf("%d extra", n)) {
		t.Errorf("the report is %d bytes, want at most 64 KiB with the %d extra messages counted in its first line: %.300s", len(text), n, text)
	}
}
