package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The fake as a helper child of this test binary: ServeStdio on the child's
// own stdio, configured by the helper's args.
func init() {
	mcptest.RegisterHelper(helperName, func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
		return ServeStdio(ctx, mcptest.HelperArgs())
	})
}

const helperName = "fakeserver"

// TestMain serves the registered helper when this binary is a helper child,
// and otherwise runs the tests under goleak.VerifyTestMain.
func TestMain(m *testing.M) { mcptest.Main(m, goleak.Cleanup(testkit.Exit)) }

func TestModernEra(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	res := result(t, r.call(wire.MethodDiscover, nil))
	if diff := cmp.Diff([]any{"2026-07-28", "2025-11-25", "2025-06-18"}, res["supportedVersions"]); diff != "" {
		t.Errorf("server/discover supportedVersions mismatch (-want +got):\n%s", diff)
	}
	if res["resultType"] != "complete" {
		t.Errorf("server/discover resultType = %v, want complete", res["resultType"])
	}
	list := result(t, r.call(wire.MethodToolsList, nil))
	if list["resultType"] != "complete" || list["cacheScope"] == nil || list["ttlMs"] == nil {
		t.Errorf("tools/list result = %v, want resultType, ttlMs and cacheScope", list)
	}
	var names []string
	for _, tl := range list["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if diff := cmp.Diff(Tools(), names); diff != "" {
		t.Errorf("tools/list names mismatch (-want +got):\n%s", diff)
	}
	if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "héllo"})); got != "héllo" {
		t.Errorf("echo = %q, want %q", got, "héllo")
	}
	// ping is gone in 2026-07-28.
	if m := r.call(wire.MethodPing, nil); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
		t.Errorf("modern ping = %+v, want error %d", m, wire.CodeMethodNotFound)
	}
	// An unsupported version gets -32022 with the supported list.
	r.writeLine([]byte(`{"jsonrpc":"2.0","id":"v","method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"1900-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	m := r.nextMsg()
	if m.Error == nil || m.Error.Code != wire.CodeUnsupportedProtocolVersion {
		t.Fatalf("unsupported version: got %+v, want error -32022", m)
	}
	var data struct {
		Supported []string
		Requested string
	}
	if err := json.Unmarshal(m.Error.Data, &data); err != nil || data.Requested != "1900-01-01" || len(data.Supported) != 3 {
		t.Errorf("-32022 data = %s (%v), want supported list and requested 1900-01-01", m.Error.Data, err)
	}
}

func TestLegacyEra(t *testing.T) {
	t.Parallel()
	for _, era := range []Era{EraBoth, EraLegacy} {
		t.Run(string(era), func(t *testing.T) {
			r := startRig(t, rigOpt{legacy: true}, WithEra(era))
			res := result(t, r.call(wire.MethodInitialize, map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "rig", "version": "0"}}))
			if res["protocolVersion"] != "2025-06-18" {
				t.Errorf("initialize protocolVersion = %v, want the offered 2025-06-18", res["protocolVersion"])
			}
			res = result(t, r.call(wire.MethodInitialize, map[string]any{"protocolVersion": "2099-01-01"}))
			if res["protocolVersion"] != "2025-11-25" {
				t.Errorf("initialize with an unknown version answered %v, want 2025-11-25", res["protocolVersion"])
			}
			r.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
			if res := result(t, r.call(wire.MethodPing, nil)); len(res) != 0 {
				t.Errorf("ping result = %v, want {}", res)
			}
			if res := result(t, r.call(wire.MethodToolsList, nil)); res["resultType"] != nil {
				t.Errorf("legacy tools/list has resultType %v", res["resultType"])
			}
			if m := r.call(wire.MethodDiscover, nil); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
				t.Errorf("server/discover without _meta = %+v, want -32601", m)
			}
		})
	}
	t.Run("legacy ignores _meta", func(t *testing.T) {
		r := startRig(t, rigOpt{}, WithEra(EraLegacy))
		if m := r.call(wire.MethodDiscover, nil); m.Error == nil || m.Error.Code != wire.CodeMethodNotFound {
			t.Errorf("legacy-only server/discover with modern _meta = %+v, want -32601 as from a server built before 2026-07-28", m)
		}
	})
	t.Run("modern only rejects initialize", func(t *testing.T) {
		r := startRig(t, rigOpt{legacy: true}, WithEra(EraModern))
		m := r.call(wire.MethodInitialize, map[string]any{"protocolVersion": "2025-11-25"})
		if m.Error == nil || m.Error.Code != wire.CodeUnsupportedProtocolVersion {
			t.Fatalf("initialize on a modern-only server = %+v, want -32022", m)
		}
		var data unsupportedData
		json.Unmarshal(m.Error.Data, &data)
		if diff := cmp.Diff(unsupportedData{Supported: []string{"2026-07-28"}, Requested: "2025-11-25"}, data); diff != "" {
			t.Errorf("-32022 data mismatch (-want +got):\n%s", diff)
		}
	})
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, WithStdinLimit(1024))
	r.writeLine([]byte(`this is not json`))
	// wire.ParseMessage rejects a response with id null, which JSON-RPC
	// 2.0 prescribes for a parse error: decode it directly.
	f, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	var m wire.Message
	if err := json.Unmarshal(f, &m); err != nil {
		t.Fatal(err)
	}
	if m.Error == nil || m.Error.Code != wire.CodeParseError || string(m.ID) != "null" {
		t.Errorf("garbage line: got %+v, want -32700 with id null", m)
	}
	r.writeLine([]byte(`{"hello":"world"}`))
	f, _ = r.next()
	m = wire.Message{}
	json.Unmarshal(f, &m)
	if m.Error == nil || m.Error.Code != wire.CodeInvalidRequest {
		t.Errorf("JSON that is not JSON-RPC: got %+v, want -32600", m)
	}
	big := make([]byte, 5000)
	for i := range big {
		big[i] = 'z'
	}
	r.writeLine(big)
	if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "after"})); got != "after" {
		t.Errorf("echo after an oversized line = %q", got)
	}
	rep := r.srv.Report()
	if rep.StdinOversized != 1 || rep.StdinParseErrors != 2 {
		t.Errorf("report: StdinOversized %d, StdinParseErrors %d; want 1 and 2", rep.StdinOversized, rep.StdinParseErrors)
	}
	// A duplicate id while the first is running.
	slow := r.tool(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, progressMeta)
	r.nextMsg() // its first progress: it is running
	r.sendID(slow, wire.MethodPing, nil)
	if m := r.nextMsg(); m.Error == nil || m.Error.Code != wire.CodeInvalidRequest || string(m.ID) != fmt.Sprint(slow) {
		t.Errorf("duplicate id: got %+v, want -32600 for id %d", m, slow)
	}
}

func TestSearchContract(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	m := r.callTool(ToolSearch, map[string]any{"query": "q"})
	var res struct {
		StructuredContent struct {
			Items         []map[string]any
			NextCursor    string
			Truncated     bool
			TotalEstimate *int
		}
	}
	json.Unmarshal(m.Result, &res)
	sc := res.StructuredContent
	if len(sc.Items) != searchDefaultPage || !sc.Truncated || sc.NextCursor == "" || sc.TotalEstimate == nil || *sc.TotalEstimate != searchDefaultTotal {
		t.Errorf("first page: %d items, truncated %v, cursor %q, total %v", len(sc.Items), sc.Truncated, sc.NextCursor, sc.TotalEstimate)
	}
	want := fmt.Sprintf("Returned 50 of 4382 matching records (1 to 50); 4332 omitted. Call search again with cursor %q to continue.", sc.NextCursor)
	if got := text(t, m); got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	m = r.callTool(ToolSearch, map[string]any{"query": "q", "cursor": sc.NextCursor, "countKnown": false, "pageSize": 10})
	res.StructuredContent.TotalEstimate = nil
	json.Unmarshal(m.Result, &res)
	sc = res.StructuredContent
	if sc.Items[0]["id"] != "rec-000050" || len(sc.Items) != 10 || sc.TotalEstimate != nil {
		t.Errorf("second page: first %v, %d items, totalEstimate %v; want rec-000050, 10, none when the count is unknown", sc.Items[0]["id"], len(sc.Items), sc.TotalEstimate)
	}
	m = r.callTool(ToolSearch, map[string]any{"cursor": "offset:4380"})
	res.StructuredContent = sc
	res.StructuredContent.NextCursor, res.StructuredContent.Truncated = "", false
	json.Unmarshal(m.Result, &res)
	if sc := res.StructuredContent; len(sc.Items) != 2 || sc.Truncated || sc.NextCursor != "" {
		t.Errorf("last page: %d items, truncated %v, cursor %q", len(sc.Items), sc.Truncated, sc.NextCursor)
	}
	if m := r.callTool(ToolSearch, map[string]any{"cursor": "bogus"}); m.Error == nil || m.Error.Code != wire.CodeInvalidParams {
		t.Errorf("bad cursor: %+v, want -32602", m)
	}

	t.Run("unbounded", func(t *testing.T) {
		r := startRig(t, rigOpt{}, Faults{UnboundedResults: true})
		m := r.callTool(ToolSearch, map[string]any{"query": "q"})
		var res struct{ StructuredContent struct{ Items []any } }
		json.Unmarshal(m.Result, &res)
		if len(res.StructuredContent.Items) != searchDefaultTotal {
			t.Errorf("unbounded search returned %d items, want all %d", len(res.StructuredContent.Items), searchDefaultTotal)
		}
	})
}

func TestProgress(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	m, notes := r.response(r.tool(ToolSlow, map[string]any{"steps": 3}, progressMeta))
	if got := text(t, m); got != "slow: 3 steps done" {
		t.Errorf("slow = %q", got)
	}
	if len(notes) != 3 {
		t.Fatalf("got %d notifications, want 3 progress", len(notes))
	}
	for i, n := range notes {
		var p struct {
			ProgressToken string
			Progress      float64
			Total         float64
		}
		json.Unmarshal(n.Params, &p)
		if n.Method != wire.MethodProgress || p.ProgressToken != "p" || p.Progress != float64(i+1) || p.Total != 3 {
			t.Errorf("notification %d = %s %s", i, n.Method, n.Params)
		}
	}
	// Without a progressToken there is no notification.
	if _, notes := r.response(r.tool(ToolSlow, map[string]any{"steps": 3}, nil)); len(notes) != 0 {
		t.Errorf("got %d notifications without a progressToken", len(notes))
	}
}

// TestShutdownOnEOF: stdin's end cancels the running work, which is
// answered with an error (JSON-RPC wants an answer to every request), and
// the server ends.
func TestShutdownOnEOF(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	slow := r.tool(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, progressMeta)
	r.nextMsg() // the first progress: the work is running
	r.in.W.Close()
	m := r.nextMsg()
	if wire.Key(m.ID) != fmt.Sprint(slow) || m.Error == nil || m.Error.Code != codeRequestCancelled {
		t.Errorf("after EOF: %s %s, want the running request %d answered with error %d", m.ID, m.Error, slow, codeRequestCancelled)
	}
	if err := r.wait(); err != nil {
		t.Errorf("Serve = %v, want nil on stdin EOF", err)
	}
	rep := r.srv.Report()
	q, _ := requestByID(rep, slow)
	if !rep.EOF || rep.Exit != "stdin EOF" || q.State != StateDone || q.Suppressed {
		t.Errorf("report after EOF: EOF %v, Exit %q, slow %+v; want the running work cancelled and answered", rep.EOF, rep.Exit, q)
	}
	if _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("stdout after Serve returned: %v, want EOF", err)
	}
}

// TestFaultDropPendingAtEOF: the messages of the last read before EOF go
// unanswered, the handshake among them; a message read alone is answered.
func TestFaultDropPendingAtEOF(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{legacy: true}, Faults{DropPendingAtEOF: true})
	r.writeLine([]byte(`{"jsonrpc":"2.0","id":"alone","method":"ping"}`))
	if m := r.nextMsg(); wire.Key(m.ID) != `"alone"` {
		t.Fatalf("a ping read alone: got %s, want its answer", m.ID)
	}
	var batch []byte
	for i := range 5 {
		batch = fmt.Appendf(batch, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	if _, err := r.in.W.Write(batch); err != nil {
		t.Fatal(err)
	}
	r.in.W.Close()
	if f, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after five pings in one write and EOF: %q, %v; want nothing, then EOF", f, err)
	}
	r.wait()
	if rep := r.srv.Report(); rep.DroppedAtEOF != 5 {
		t.Errorf("Report.DroppedAtEOF = %d, want 5", rep.DroppedAtEOF)
	}
}

// TestFaultEndUnlessInitialize: a first message other than initialize ends
// the server; initialize first is served.
func TestFaultEndUnlessInitialize(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{EndUnlessInitialize: true})
	r.writeLine([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`))
	if f, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after server/discover first: %q, %v; want stdout closed", f, err)
	}
	if err := r.wait(); !errors.Is(err, ErrExited) {
		t.Errorf("Serve = %v, want ErrExited", err)
	}
	r2 := startRig(t, rigOpt{legacy: true}, Faults{EndUnlessInitialize: true})
	r2.writeLine([]byte(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"rig","version":"0"}}}`))
	if m := r2.nextMsg(); m.Error != nil || wire.Key(m.ID) != `"init"` {
		t.Errorf("initialize first: %s %s, want its result", m.ID, m.Error)
	}
	if m, _ := r2.response(r2.tool(ToolEcho, map[string]any{"text": "hi"}, nil)); m.Error != nil {
		t.Errorf("after initialize: echo = %s", m.Error)
	}
}

// TestCancelMatchesIDByValue: a cancel names its request by JSON value, not
// by spelling: "a\u0026b" is the id "a&b".
func TestCancelMatchesIDByValue(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{legacy: true})
	r.writeLine([]byte(`{"jsonrpc":"2.0","id":"a&b","method":"tools/call","params":{"name":"slow","arguments":{"steps":2,"intervalMs":3600000},"_meta":{"progressToken":"p"}}}`))
	r.nextMsg() // the first progress: the work is running
	r.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a\u0026b","reason":"test"}}`))
	rep := r.waitReport("the cancel to stop the work", func(rep Report) bool { return len(rep.Cancels) == 1 && rep.Cancels[0].Stopped })
	if c := rep.Cancels[0]; c.ID != `"a&b"` || c.State != StateRunning || !c.Suppressed || c.Reason != "test" {
		t.Errorf("cancel %+v: want id \"a&b\" found running, its response suppressed, reason test", c)
	}
}
