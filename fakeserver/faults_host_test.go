package fakeserver

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

func TestCallHangAnswersAfterCancelOnlyWhenTold(t *testing.T) {
	for _, late := range []bool{false, true} {
		r := startRig(t, rigOpt{}, Faults{Call: CallHang, RespondAfterCancel: late})
		id := r.tool("whatever-the-host-calls", nil, nil)
		r.waitReport("the call running", func(rep Report) bool {
			q, ok := requestByID(rep, id)
			return ok && q.State == StateRunning && q.Tool == "whatever-the-host-calls"
		})
		r.cancelReq(id)
		rep := r.waitReport("the call stopped", func(rep Report) bool { c, ok := cancelByID(rep, id); return ok && c.Stopped })
		q, _ := requestByID(rep, id)
		if q.Suppressed == late {
			t.Errorf("RespondAfterCancel %v: response suppressed %v", late, q.Suppressed)
		}
		if late {
			if m, _ := r.response(id); m.Error == nil {
				t.Errorf("the late answer is %s, want the cancelled error", m.Result)
			}
		}
		// A later call of a tool the fake does not have is answered as echo.
		if got := text(t, r.callTool("another-tool", map[string]any{"text": "again"})); got != "again" {
			t.Errorf("the call after the hang: %q, want the echo", got)
		}
		r.close()
	}
}

func TestCallToolWithArgs(t *testing.T) {
	r := startRig(t, rigOpt{}, Faults{Call: ToolBig, CallArgs: `{"bytes":1000}`})
	if got := text(t, r.callTool("read_file", map[string]any{"path": "x"})); len(got) != 1000 {
		t.Errorf("the first call as big with -call-args: %d bytes of text, want 1000", len(got))
	}
}

func TestCallCrashExitsMidFrame(t *testing.T) {
	r := startRig(t, rigOpt{}, Faults{Call: CallCrash})
	r.tool("x", nil, nil)
	var n int
	for {
		f, err := r.next()
		n += len(f)
		if err != nil {
			break
		}
	}
	if err := r.wait(); !errors.Is(err, ErrExited) {
		t.Errorf("Serve: %v, want ErrExited", err)
	}
	rep := r.srv.Report()
	if rep.CallCrashed.IsZero() || rep.StdoutBytes < CrashFrameSize/2-64<<10 || rep.StdoutBytes > CrashFrameSize/2+64<<10 {
		t.Errorf("crash: CallCrashed %v, %d bytes on stdout, want about %d", rep.CallCrashed, rep.StdoutBytes, CrashFrameSize/2)
	}
}

func TestStopReadingAfterHandshake(t *testing.T) {
	r := startRig(t, rigOpt{legacy: true}, Faults{StopReadingAfterHandshake: true})
	r.call(wire.MethodInitialize, map[string]any{"protocolVersion": wire.Version20251125})
	r.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	r.waitReport("stdin stopped", func(rep Report) bool { return !rep.StdinStopped.IsZero() })
	r.tool("echo", map[string]any{"text": "never read"}, nil)
	if rep := r.srv.Report(); len(rep.Requests) != 1 || rep.StdinMessages != 2 {
		t.Errorf("after the handshake the fake read %d messages and %d requests, want 2 and 1", rep.StdinMessages, len(rep.Requests))
	}
}

func TestToolsListBytes(t *testing.T) {
	r := startRig(t, rigOpt{}, Faults{ToolsListBytes: 300_000})
	m := r.call(wire.MethodToolsList, nil)
	if len(m.Result) < 300_000 {
		t.Errorf("tools/list is %d bytes, want at least 300000", len(m.Result))
	}
	tools, _ := result(t, m)["tools"].([]any)
	last, _ := tools[len(tools)-1].(map[string]any)
	rep := r.srv.Report()
	if rep.FillerTools < 200 || last["name"] != FillerTool(rep.FillerTools) {
		t.Errorf("tools/list: %d tools, the last %v; the report says %d filler tools", len(tools), last["name"], rep.FillerTools)
	}
}

func TestCallFlagsChecked(t *testing.T) {
	for _, args := range [][]string{{"-call", "nope"}, {"-call", "big", "-call-args", "[1]"}} {
		if _, err := ParseArgs(args); err == nil || !strings.Contains(err.Error(), "-call") {
			t.Errorf("ParseArgs(%q): %v, want an error naming the flag", args, err)
		}
	}
}
