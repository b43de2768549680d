package fakeserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Each test checks that a fault does exactly what its Faults field's doc
// says.

func TestFaultBanner(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{Banner: "hello from the server"})
	f, err := r.next()
	if err != nil || string(f) != "hello from the server" {
		t.Fatalf("first line %q, %v; want the banner", f, err)
	}
	r.callTool(ToolEcho, map[string]any{"text": "ok"})
}

func TestFaultStdoutLog(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{StdoutLogAfter: 2, StdoutLogLine: "LOG: something happened"})
	r.call(wire.MethodDiscover, nil) // message 1: no log line
	id := r.send(wire.MethodDiscover, nil)
	if f, _ := r.next(); string(f) != "LOG: something happened" {
		t.Errorf("after message 2: %q, want the log line", f)
	}
	r.response(id)
}

func TestFaultStderrNoise(t *testing.T) {
	t.Parallel()
	const n = 100_003
	r := startRig(t, rigOpt{}, Faults{StderrNoise: n})
	r.callTool(ToolEcho, map[string]any{"text": "ok"})
	r.in.W.Close()
	r.wait()
	if got := r.stderr.Total(); got != n {
		t.Errorf("stderr got %d bytes, want exactly %d", got, n)
	}
	if rep := r.srv.Report(); rep.StderrBytes != n {
		t.Errorf("report StderrBytes %d, want %d", rep.StderrBytes, n)
	}
	if !strings.HasPrefix(r.stderr.String(), "fakeserver: stderr noise line 00000001") {
		t.Errorf("stderr starts %.60q", r.stderr.String())
	}
}

// blockedThenCancelled starts a big response that blocks on a full stdout,
// queues an echo behind the write lock, cancels the echo, and returns the
// echo's id; the host has not read anything yet.
func blockedThenCancelled(t *testing.T, r *rig) int64 {
	t.Helper()
	r.tool(ToolBig, BigArgs{FrameSize: bigSize}.Map(), nil)
	r.waitStdoutFull()
	echo := r.tool(ToolEcho, map[string]any{"text": "queued"}, nil)
	r.waitReport("the echo to run", func(rep Report) bool { q, _ := requestByID(rep, echo); return q.State == StateRunning })
	r.cancelReq(echo)
	r.waitReport("the cancel", func(rep Report) bool { _, ok := cancelByID(rep, echo); return ok })
	return echo
}

func TestFaultIgnoreCancel(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{outCap: 4096}, Faults{IgnoreCancel: true})
	echo := blockedThenCancelled(t, r)
	if f, err := r.next(); err != nil || len(f) != bigSize {
		t.Errorf("big response %d bytes (%v), want all %d: the cancel is ignored", len(f), err, bigSize)
	}
	if m, _ := r.response(echo); text(t, m) != "queued" {
		t.Errorf("echo after an ignored cancel: %s", m.Result)
	}
	c, _ := cancelByID(r.waitReport("stopped", func(rep Report) bool { c, _ := cancelByID(rep, echo); return c.Stopped }), echo)
	if c.State != StateRunning || c.Suppressed {
		t.Errorf("cancel %+v: want running, not suppressed", c)
	}
}

func TestFaultRespondAfterCancel(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{outCap: 4096}, Faults{RespondAfterCancel: true})
	echo := blockedThenCancelled(t, r)
	r.next() // big
	if m, _ := r.response(echo); text(t, m) != "queued" {
		t.Errorf("a finished result cancelled before writing: %s, want it written anyway", m.Result)
	}
	slow := r.tool(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, progressMeta)
	r.nextMsg()
	r.cancelReq(slow)
	m, _ := r.response(slow)
	if m.Error == nil || m.Error.Code != codeRequestCancelled {
		t.Errorf("response for work stopped by a cancel: %+v, want error %d", m, codeRequestCancelled)
	}
	// The correct core sends nothing instead.
	r2 := startRig(t, rigOpt{outCap: 4096})
	echo = blockedThenCancelled(t, r2)
	r2.next()
	if m := r2.call(wire.MethodDiscover, nil); m.Error != nil {
		t.Fatal(m.Error) // r2.call fails on any response other than its own
	}
	rep := r2.waitReport("the echo to stop", func(rep Report) bool { c, _ := cancelByID(rep, echo); return c.Stopped })
	if c, _ := cancelByID(rep, echo); !c.Suppressed {
		t.Errorf("correct core: cancel %+v not suppressed", c)
	}
}

func TestFaultInvalidJSON(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{InvalidJSONAfter: 1})
	id := r.send(wire.MethodDiscover, nil)
	f, _ := r.next()
	if string(f) != invalidJSONLine || json.Valid(f) {
		t.Errorf("line %q: want invalidJSONLine, not valid JSON", f)
	}
	r.response(id)
}

func TestFaultRawNewline(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{RawNewline: 1})
	r.send(wire.MethodDiscover, nil)
	a, _ := r.next()
	b, _ := r.next()
	if string(a) != `{"jsonrpc":"2.0",` || json.Valid(a) || json.Valid(b) {
		t.Errorf("lines %q and %.40q: want the frame split after {\"jsonrpc\":\"2.0\",", a, b)
	}
	if m, err := wire.ParseMessage(append(a, b...)); err != nil || !m.IsResponse() {
		t.Errorf("the two halves together: %v", err)
	}
	r.call(wire.MethodDiscover, nil) // the next frame is whole again
}

func TestFaultOversizedFrame(t *testing.T) {
	t.Parallel()
	const size = 100_000
	r := startRig(t, rigOpt{frameMax: size}, Faults{OversizedAfter: 1, OversizedSize: size})
	id := r.send(wire.MethodDiscover, nil)
	f, err := r.next()
	if err != nil || len(f) != size {
		t.Fatalf("frame %d bytes (%v), want %d", len(f), err, size)
	}
	if m, err := wire.ParseMessage(f); err != nil || m.Method != wire.MethodMessage {
		t.Errorf("oversized frame is not a valid notification: %v", err)
	}
	r.response(id)
	if got := oversizedFrame(1); len(got) != len(oversizedHead)+len(oversizedTail) {
		t.Errorf("oversizedFrame(1) is %d bytes, want the %d-byte minimum", len(got), len(oversizedHead)+len(oversizedTail))
	}
	r = startRig(t, rigOpt{frameMax: size}, Faults{OversizedAfter: 1, OversizedSize: size + 1})
	id = r.send(wire.MethodDiscover, nil)
	var tl *pipes.FrameTooLargeError
	if _, err := r.next(); !errors.As(err, &tl) || tl.Size != size+1 {
		t.Errorf("got %v, want a %d-byte FrameTooLargeError", err, size+1)
	}
	r.response(id)
}

func TestFaultNoFinalNewline(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{NoFinalNewline: 2})
	r.call(wire.MethodDiscover, nil)
	r.send(wire.MethodDiscover, nil)
	_, err := r.next()
	var te *pipes.TruncatedFrameError
	if !errors.As(err, &te) || !bytes.HasPrefix(te.Head, []byte(`{"jsonrpc":"2.0","id":2,"result"`)) {
		t.Fatalf("got %v, want the response to message 2 cut off by EOF", err)
	}
	if err := r.wait(); !errors.Is(err, ErrExited) {
		t.Errorf("Serve = %v, want ErrExited", err)
	}
	q, _ := requestByID(r.srv.Report(), 2)
	if q.ResponseBytes != te.Lost {
		t.Errorf("report says %d bytes of the response, the host lost %d", q.ResponseBytes, te.Lost)
	}
}

func TestFaultCloseStdout(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{CloseStdoutAfter: 1})
	r.call(wire.MethodDiscover, nil)
	if _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Errorf("after the first response: %v, want EOF on stdout", err)
	}
	r.send(wire.MethodDiscover, nil)
	r.waitReport("the second request to fail to write", func(rep Report) bool {
		return len(rep.Requests) == 2 && rep.StdoutWriteErrors == 1 && rep.Requests[1].State == StateDone
	})
	r.in.W.Close()
	if err := r.wait(); err != nil {
		t.Errorf("Serve = %v, want nil on EOF", err)
	}
}

func TestFaultExitAfterBytes(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{ExitAfterBytes: 5000})
	r.tool(ToolBig, BigArgs{FrameSize: 10_000, ChunkSize: 999}.Map(), nil)
	_, err := r.next()
	var te *pipes.TruncatedFrameError
	if !errors.As(err, &te) || te.Lost != 5000 {
		t.Fatalf("got %v, want the response cut off after 5000 bytes", err)
	}
	if err := r.wait(); !errors.Is(err, ErrExited) {
		t.Errorf("Serve = %v, want ErrExited", err)
	}
	if rep := r.srv.Report(); rep.StdoutBytes != 5000 {
		t.Errorf("report StdoutBytes %d, want 5000", rep.StdoutBytes)
	}
}

func TestFaultIgnoreEOF(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{IgnoreEOF: true})
	id := r.tool(ToolSlow, map[string]any{"steps": 2, "intervalMs": 3600_000}, progressMeta)
	r.nextMsg()
	r.in.W.Close()
	rep := r.waitReport("EOF", func(rep Report) bool { return rep.EOF })
	if q, _ := requestByID(rep, id); q.State != StateRunning {
		t.Errorf("after an ignored EOF the work is %q, want still running", q.State)
	}
	select {
	case err := <-r.done:
		t.Fatalf("Serve returned %v after EOF despite WithIgnoreEOF", err)
	default:
	}
	r.cancel()
	if err := r.wait(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if rep := r.srv.Report(); rep.Exit != "context cancelled (stdin EOF ignored)" {
		t.Errorf("Exit = %q", rep.Exit)
	}
}

func TestFaultServerRequest(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{}, Faults{ServerRequestAfter: 1})
	id := r.send(wire.MethodDiscover, nil)
	m := r.nextMsg()
	if !m.IsRequest() || m.Method != "ping" || string(m.ID) != `"fakeserver-1"` {
		t.Fatalf("got %+v, want the server-to-client ping", m)
	}
	r.response(id)
	r.writeLine([]byte(`{"jsonrpc":"2.0","id":"fakeserver-1","result":{}}`))
	r.waitReport("the answer", func(rep Report) bool { return rep.ResponsesRead == 1 })
}

func TestReportFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "report.json")
	r := startRig(t, rigOpt{}, WithReportFile(path))
	r.callTool(ToolEcho, map[string]any{"text": "x"})
	waitFor(t, "the report file to show the request", func() bool {
		rep, err := ReadReportFile(path)
		return err == nil && len(rep.Requests) == 1 && rep.Requests[0].State == StateDone
	})
	r.in.W.Close()
	r.wait()
	rep, err := ReadReportFile(path)
	if err != nil || rep.Exit != "stdin EOF" {
		t.Errorf("final report file: Exit %q, %v", rep.Exit, err)
	}
	got := r.srv.Report()
	if diff := cmp.Diff(jsonRoundTrip(t, got), rep); diff != "" {
		t.Errorf("report file differs from Report() (-want +got):\n%s", diff)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp*"))
	if len(matches) != 0 {
		t.Errorf("temporary files left: %v", matches)
	}
}

// TestReportFileErrorSaidOnce: a report file that cannot be written
// (here its directory does not exist) fails on every change, and stderr
// says so once (it said it once per change: 130 lines for 3 messages).
func TestReportFileErrorSaidOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "report.json")
	r := startRig(t, rigOpt{}, WithReportFile(path))
	for i := range 5 {
		r.callTool(ToolEcho, map[string]any{"text": fmt.Sprint(i)})
	}
	r.in.W.Close()
	r.wait()
	var said []string
	for _, l := range strings.Split(string(r.stderr.Bytes()), "\n") {
		if strings.Contains(l, "report:") {
			said = append(said, l)
		}
	}
	if len(said) != 1 || !strings.Contains(said[0], "no such file or directory") || !strings.Contains(said[0], "not said") {
		t.Errorf("stderr's report lines: %q; want the first error, once", said)
	}
}

func jsonRoundTrip(t *testing.T, r Report) Report {
	t.Helper()
	var out Report
	if err := json.Unmarshal(mustJSON(t, r), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	opts, err := ParseArgs([]string{"-era", "legacy", "-tools", "echo,big", "-naive", "-stderr-noise", "10",
		"-oversized-after", "2", "-oversized-size", "500", "-subprocess-command", `["sh","-c","true"]`, "-report", "/x/r.json"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(opts...)
	c := s.cfg
	if c.era != EraLegacy || len(c.tools) != 2 || !c.tools[ToolBig] || c.reportFile != "/x/r.json" ||
		!cmp.Equal(c.subprocess, []string{"sh", "-c", "true"}) {
		t.Errorf("config from flags: %+v", c)
	}
	want := Faults{NaiveLoop: true, StderrNoise: 10, OversizedAfter: 2, OversizedSize: 500, StdoutLogLine: defaultStdoutLogLine}
	if diff := cmp.Diff(want, c.faults); diff != "" {
		t.Errorf("faults from flags mismatch (-want +got):\n%s", diff)
	}
	for _, bad := range [][]string{
		{"-era", "future"}, {"-tools", "echo,teleport"}, {"-oversized-after", "1"},
		{"-subprocess-command", "sh -c true"}, {"extra"}, {"-nope"}, {"-stderr-noise", "-1"}, {"-raw-newline", "-2"},
	} {
		if _, err := ParseArgs(bad); err == nil {
			t.Errorf("ParseArgs(%q) = nil error", bad)
		}
	}
	if _, err := ParseArgs([]string{"-h"}); !errors.Is(err, flag.ErrHelp) || !strings.Contains(err.Error(), "-naive") {
		t.Errorf("ParseArgs(-h) = %v, want flag.ErrHelp with the flag list", err)
	}
}

// TestFaultFlags: every field of Faults is a flag, named by its tag, that
// sets that field and no other, and -h lists it with its usage.
func TestFaultFlags(t *testing.T) {
	t.Parallel()
	_, err := ParseArgs([]string{"-h"})
	help := fmt.Sprint(err)
	ft := reflect.TypeFor[Faults]()
	names := map[string]bool{}
	for i := range ft.NumField() {
		f := ft.Field(i)
		name, usage := f.Tag.Get("flag"), f.Tag.Get("usage")
		if name == "" || usage == "" || names[name] {
			t.Errorf("Faults.%s: flag %q, usage %q: want a unique flag name and a usage", f.Name, name, usage)
			continue
		}
		names[name] = true
		if !strings.Contains(help, "-"+name) || !strings.Contains(help, usage+" (Faults."+f.Name+")") {
			t.Errorf("-h does not list -%s with its usage", name)
		}
		var want Faults
		value := "7"
		switch p := reflect.ValueOf(&want).Elem().Field(i).Addr().Interface().(type) {
		case *string:
			value, *p = "seven", "seven"
		case *int:
			*p = 7
		case *int64:
			*p = 7
		case *bool:
			value, *p = "true", true
		}
		switch f.Name { // the string faults whose values are checked
		case "Call":
			value, want.Call = CallHang, CallHang
		case "CallArgs":
			value, want.CallArgs = `{"a":1}`, `{"a":1}`
		}
		args := []string{"-" + name + "=" + value}
		if f.Name == "OversizedAfter" {
			args, want.OversizedSize = append(args, "-oversized-size=1"), 1
		}
		if want.StdoutLogLine == "" {
			want.StdoutLogLine = defaultStdoutLogLine
		}
		opts, err := ParseArgs(args)
		if err != nil {
			t.Errorf("ParseArgs(%q): %v", args, err)
			continue
		}
		if diff := cmp.Diff(want, New(opts...).cfg.faults); diff != "" {
			t.Errorf("ParseArgs(%q) faults mismatch (-want +got):\n%s", args, diff)
		}
	}
}

func TestServeTwice(t *testing.T) {
	t.Parallel()
	r := startRig(t, rigOpt{})
	r.call(wire.MethodDiscover, nil) // the first Serve is running
	if err := r.srv.Serve(t.Context(), r.in.R, r.out.W, nil); err == nil {
		t.Error("second Serve returned nil")
	}
}
