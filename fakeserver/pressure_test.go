package fakeserver

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/wire"
)

const bigSize = 1 << 20

// TestCoreReadsWhileWriteBlocked: with the host not reading stdout, a 1 MiB
// response fills the pipe and blocks the server in write; the correct core
// still reads the next request and the cancel, cuts the response short when
// the host reads again, and then answers the second request.
func TestCoreReadsWhileWriteBlocked(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{outCap: 4096})
	big := r.tool(ToolBig, BigArgs{FrameSize: bigSize, Kind: PayloadQuotes, ChunkSize: 4096}.Map(), nil)
	r.waitStdoutFull()
	r.waitReport("the big response to be writing", func(rep Report) bool {
		q, _ := requestByID(rep, big)
		return q.State == StateWriting
	})
	echo := r.tool(ToolEcho, map[string]any{"text": "second"}, nil)
	r.waitReport("the second request to be read while stdout is blocked", func(rep Report) bool {
		_, ok := requestByID(rep, echo)
		return ok
	})
	r.cancelReq(big)
	c := r.waitReport("the cancel to be read while stdout is blocked", func(rep Report) bool {
		_, ok := cancelByID(rep, big)
		return ok
	}).Cancels[0]
	if c.State != StateWriting || c.Stopped {
		t.Errorf("cancel record %+v: want state writing, not stopped while the write is blocked", c)
	}
	if n, err := r.in.Buffered(); err != nil || n != 0 {
		t.Errorf("stdin pipe holds %d unread bytes (%v), want 0: the core reads stdin while blocked", n, err)
	}

	// The host reads again.
	f, err := r.next()
	if err != nil {
		t.Fatal(err)
	}
	if len(f) >= bigSize {
		t.Errorf("the cancelled response is %d bytes, want it cut short of %d", len(f), bigSize)
	}
	m, err := wire.ParseMessage(f)
	if err != nil {
		t.Fatalf("the cut response is not valid JSON-RPC: %v", err)
	}
	if id, _ := m.IntID(); id != big {
		t.Errorf("first frame has id %d, want the big response %d", id, big)
	}
	if m, _ := r.response(echo); text(t, m) != "second" {
		t.Errorf("second request: %s", m.Result)
	}
	rep := r.waitReport("the big work to stop", func(rep Report) bool { return rep.Cancels[0].Stopped })
	q, _ := requestByID(rep, big)
	if !q.Cut || q.ResponseBytes != int64(len(f))+1 {
		t.Errorf("big request record %+v: want Cut and ResponseBytes %d", q, len(f)+1)
	}
	if rep.StdoutLongestBlock <= 0 || rep.StdoutBlocked < rep.StdoutLongestBlock {
		t.Errorf("report blocked times: total %v, longest %v", rep.StdoutBlocked, rep.StdoutLongestBlock)
	}
}

// TestNaiveLoopDeadlocks: the naive loop reads stdin only between writes, so
// while its stdout write is blocked the next request stays in the stdin
// pipe; it recovers when the host reads again.
func TestNaiveLoopDeadlocks(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{outCap: 4096}, Faults{NaiveLoop: true})
	big := r.tool(ToolBig, BigArgs{FrameSize: bigSize}.Map(), nil)
	r.waitStdoutFull()
	line := `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"echo","arguments":{"text":"second"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r.writeLine([]byte(line))
	r.cancelReq(big)
	n, err := r.in.Buffered()
	if err != nil {
		t.Fatal(err)
	}
	if want := len(line) + 1; n < want {
		t.Errorf("stdin pipe holds %d bytes, want at least the %d of the unread request: the naive loop must not read while blocked", n, want)
	}
	if rep := r.srv.Report(); len(rep.Requests) != 1 || len(rep.Cancels) != 0 {
		t.Errorf("naive loop saw %d requests and %d cancels while blocked, want 1 and 0", len(rep.Requests), len(rep.Cancels))
	}
	// Recovery: the host reads; the whole big response arrives, then the
	// echo, and the cancel (read afterwards) finds the work done.
	f, err := r.next()
	if err != nil || len(f) != bigSize {
		t.Fatalf("big response: %d bytes, %v; want %d", len(f), err, bigSize)
	}
	if m, _ := r.response(99); text(t, m) != "second" {
		t.Errorf("second request: %s", m.Result)
	}
	c := r.waitReport("the late cancel", func(rep Report) bool { return len(rep.Cancels) == 1 }).Cancels[0]
	if c.State != StateDone {
		t.Errorf("cancel read after the response: state %q, want done", c.State)
	}
}

// TestCancelStates covers each state a cancel can find the work in; after
// each, the report shows the producer stopped and a second request
// completes.
func TestCancelStates(t *testing.T) {
	t.Parallel()
	t.Run("not started", func(t *testing.T) {
		r := startRig(t, rigOpt{}, WithConcurrency(1))
		slow := r.tool(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, progressMeta)
		r.nextMsg() // first progress: slow holds the only slot
		queued := r.tool(ToolEcho, map[string]any{"text": "never"}, nil)
		r.waitReport("the queued request", func(rep Report) bool { _, ok := requestByID(rep, queued); return ok })
		r.cancelReq(queued)
		c := r.waitReport("the queued work to stop", func(rep Report) bool {
			c, _ := cancelByID(rep, queued)
			return c.Stopped
		})
		cq, _ := cancelByID(c, queued)
		if cq.State != StateNotStarted || !cq.Suppressed {
			t.Errorf("cancel %+v: want state not started, response suppressed", cq)
		}
		r.cancelReq(slow)
		cs, _ := cancelByID(r.waitReport("slow to stop", func(rep Report) bool { c, _ := cancelByID(rep, slow); return c.Stopped }), slow)
		if cs.State != StateRunning || !cs.Suppressed {
			t.Errorf("cancel %+v: want state running, response suppressed", cs)
		}
		if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "ok"})); got != "ok" {
			t.Errorf("second request = %q", got)
		}
	})
	t.Run("remote", func(t *testing.T) {
		r := startRig(t, rigOpt{})
		id := r.tool(ToolRemote, map[string]any{"chunks": 3, "chunkBytes": 1000, "intervalMs": 3600_000}, progressMeta)
		if m := r.nextMsg(); m.Method != wire.MethodProgress {
			t.Fatalf("want progress after the first chunk, got %s", m.Method)
		}
		r.cancelReq(id)
		c, _ := cancelByID(r.waitReport("remote to stop", func(rep Report) bool { c, _ := cancelByID(rep, id); return c.Stopped }), id)
		if c.State != StateRunning || !c.RemoteAborted || !c.Suppressed || c.StoppedAfter <= 0 {
			t.Errorf("cancel %+v: want running, remote aborted, suppressed", c)
		}
		if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "ok"})); got != "ok" {
			t.Errorf("second request = %q", got)
		}
		if rep := r.srv.Report(); rep.RemoteAborts != 1 {
			t.Errorf("RemoteAborts = %d, want 1", rep.RemoteAborts)
		}
	})
	t.Run("subprocess", func(t *testing.T) {
		needShell(t)
		r := startRig(t, rigOpt{})
		id := r.tool(ToolSubprocess, map[string]any{"stdoutBytes": 200_000, "stderrBytes": 100_000, "hold": true}, progressMeta)
		if m := r.nextMsg(); m.Method != wire.MethodProgress || !strings.Contains(string(m.Params), "started pid") {
			t.Fatalf("want progress saying the child started, got %s %s", m.Method, m.Params)
		}
		r.cancelReq(id)
		c, _ := cancelByID(r.waitReport("the subprocess to stop", func(rep Report) bool { c, _ := cancelByID(rep, id); return c.Stopped }), id)
		if c.State != StateRunning || !c.ChildKilled || !c.Suppressed {
			t.Errorf("cancel %+v: want running, child killed, suppressed", c)
		}
		if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "ok"})); got != "ok" {
			t.Errorf("second request = %q", got)
		}
	})
	t.Run("writing", func(t *testing.T) {
		// TestCoreReadsWhileWriteBlocked covers a cancel while writing with
		// stdout blocked; here the host keeps reading at its own pace.
		r := startRig(t, rigOpt{outCap: 4096})
		id := r.tool(ToolBig, BigArgs{FrameSize: bigSize, Layout: LayoutBlocks, Blocks: 100, ChunkSize: 1000}.Map(), nil)
		r.waitReport("writing", func(rep Report) bool { q, _ := requestByID(rep, id); return q.State == StateWriting })
		r.cancelReq(id)
		r.waitReport("the cancel", func(rep Report) bool { return len(rep.Cancels) == 1 })
		m := r.nextMsg()
		var res struct{ Content []any }
		if err := json.Unmarshal(m.Result, &res); err != nil || len(res.Content) >= 100 {
			t.Errorf("cut response: %d blocks (%v), want fewer than 100", len(res.Content), err)
		}
		c := r.waitReport("stop", func(rep Report) bool { return rep.Cancels[0].Stopped }).Cancels[0]
		if c.State != StateWriting || c.Suppressed {
			t.Errorf("cancel %+v: want writing, not suppressed", c)
		}
		if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "ok"})); got != "ok" {
			t.Errorf("second request = %q", got)
		}
	})
	t.Run("done and unknown", func(t *testing.T) {
		r := startRig(t, rigOpt{})
		id := r.tool(ToolEcho, map[string]any{"text": "x"}, nil)
		r.response(id)
		r.waitReport("echo done", func(rep Report) bool { q, _ := requestByID(rep, id); return q.State == StateDone })
		r.cancelReq(id)
		r.cancelReq(12345)
		r.writeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}`))
		if got := text(t, r.callTool(ToolEcho, map[string]any{"text": "ok"})); got != "ok" {
			t.Errorf("second request = %q (cancels of finished or unknown ids must be ignored quietly)", got)
		}
		rep := r.srv.Report()
		if len(rep.Cancels) != 2 || rep.Cancels[0].State != StateDone || rep.Cancels[1].State != StateUnknown {
			t.Errorf("cancels %+v: want done, unknown", rep.Cancels)
		}
	})
}

func TestSubprocessOutput(t *testing.T) {
	t.Parallel()
	needShell(t)
	r := startRig(t, rigOpt{})
	m := r.callTool(ToolSubprocess, map[string]any{"stdoutBytes": 1_000_000, "stderrBytes": 70_000, "limit": 100})
	var res struct {
		StructuredContent struct {
			ExitCode                   int
			StdoutBytes, StdoutDropped int64
			StderrBytes, StderrDropped int64
			Truncated                  bool
		}
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		t.Fatal(err)
	}
	sc := res.StructuredContent
	if sc.ExitCode != 0 || sc.StdoutBytes != 1_000_000 || sc.StdoutDropped != 1_000_000-100 || sc.StderrBytes != 70_000 || sc.StderrDropped != 70_000-100 || !sc.Truncated {
		t.Errorf("subprocess result %+v", sc)
	}
	if txt := text(t, m); !strings.Contains(txt, "999900 dropped") || !strings.Contains(txt, strings.Repeat("x", 50)) {
		t.Errorf("text %q does not say what was dropped or show the kept bytes", txt)
	}
}

func TestSubprocessTestBinaryChild(t *testing.T) {
	t.Setenv("GORACE", "atexit_sleep_ms=0") // a -race child otherwise sleeps 1s in exit
	r := startRig(t, rigOpt{}, WithSubprocessCommand(testBinary(t), "-test.run=^TestHelperSubprocessChild$"))
	m := r.callTool(ToolSubprocess, map[string]any{"stdoutBytes": 5000, "stderrBytes": 3, "limit": 10})
	if txt := text(t, m); !strings.Contains(txt, "stdout: 5000 bytes, 4990 dropped; stderr: 3 bytes, 0 dropped") {
		t.Errorf("text %q", txt)
	}
	id := r.tool(ToolSubprocess, map[string]any{"hold": true}, progressMeta)
	r.nextMsg()
	r.cancelReq(id)
	c, _ := cancelByID(r.waitReport("child killed", func(rep Report) bool { c, _ := cancelByID(rep, id); return c.Stopped }), id)
	if !c.ChildKilled {
		t.Errorf("cancel %+v: child not killed", c)
	}
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestHelperSubprocessChild is not a test: it is the child the subprocess
// tool runs when TestSubprocessTestBinaryChild points it at the test binary
// (the os/exec pattern). Run normally, it returns at once.
func TestHelperSubprocessChild(t *testing.T) {
	out := os.Getenv(EnvSubprocessStdout)
	if out == "" {
		return
	}
	errBytes, _ := strconv.Atoi(os.Getenv(EnvSubprocessStderr))
	outBytes, _ := strconv.Atoi(out)
	os.Stdout.Write([]byte(strings.Repeat("c", outBytes)))
	os.Stderr.Write([]byte(strings.Repeat("e", errBytes)))
	if os.Getenv(EnvSubprocessHold) == "1" {
		io.Copy(io.Discard, os.Stdin) // until killed
	}
	os.Exit(0) // before the testing package prints anything on stdout
}
