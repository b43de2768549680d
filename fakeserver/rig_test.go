package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/wire"
)

// rig runs a Server in-process on real kernel pipes and plays a minimal
// host: it writes JSON lines to the server's stdin and reads frames from its
// stdout only when the test says so, so a test stalls the host by simply not
// reading.
type rig struct {
	t      testing.TB
	srv    *Server
	in     *pipes.Pipe // host writes in.W, server reads in.R
	out    *pipes.Pipe // server writes out.W, host reads out.R
	stderr *pipes.Capture
	fr     *pipes.Framer
	cancel context.CancelFunc
	done   chan error
	served error
	ended  bool
	modern bool
	nextID int64
}

type rigOpt struct {
	outCap   int // stdout pipe capacity; 0 keeps the default
	frameMax int // host framer limit
	legacy   bool
	// wrapStdout, if set, wraps the stdout the server is given.
	wrapStdout func(io.WriteCloser) io.WriteCloser
}

// testBound is the generous upper bound on any wait in these tests.
func testBound(t testing.TB) time.Duration { return bound.For(t, 30*time.Second) }

// rigPipes makes the stdin and stdout pipes of a rig, stdout of ro.outCap
// bytes if set.
func rigPipes(t testing.TB, ro rigOpt) (in, out *pipes.Pipe) {
	t.Helper()
	in, err := pipes.New()
	if err != nil {
		t.Fatal(err)
	}
	out, err = pipes.New()
	if err != nil {
		t.Fatal(err)
	}
	if ro.outCap > 0 {
		if _, err := out.SetCapacity(ro.outCap); err != nil {
			t.Skipf("setting the pipe capacity needs Linux: %v", err)
		}
	}
	return in, out
}

func startRig(t testing.TB, ro rigOpt, opts ...Option) *rig {
	t.Helper()
	return startRigServer(t, ro, New(opts...))
}

// startRigServer runs srv, which has not served yet, under a rig.
func startRigServer(t testing.TB, ro rigOpt, srv *Server) *rig {
	t.Helper()
	in, out := rigPipes(t, ro)
	if ro.frameMax == 0 {
		ro.frameMax = 64 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &rig{
		t: t, srv: srv, in: in, out: out, stderr: pipes.NewCapture(1 << 16),
		fr: pipes.NewFramer(out.R, ro.frameMax), cancel: cancel, done: make(chan error, 1),
		modern: !ro.legacy,
	}
	var stdout io.WriteCloser = out.W
	if ro.wrapStdout != nil {
		stdout = ro.wrapStdout(stdout)
	}
	go func() { r.done <- r.srv.Serve(ctx, in.R, stdout, r.stderr) }()
	t.Cleanup(r.close)
	return r
}

// close ends the server (stdin EOF, then context) and checks that Serve
// returned within the bound.
func (r *rig) close() {
	r.in.W.Close()
	r.cancel()
	r.wait()
	r.in.Close()
	r.out.Close()
}

// wait returns Serve's result, failing the test if it does not return.
func (r *rig) wait() error {
	r.t.Helper()
	if r.ended {
		return r.served
	}
	select {
	case r.served = <-r.done:
		r.ended = true
	case <-time.After(testBound(r.t)):
		r.t.Fatalf("Serve did not return within %v; report: %+v", testBound(r.t), r.srv.Report())
	}
	return r.served
}

func (r *rig) meta(extra map[string]any) map[string]any {
	m := map[string]any{}
	if r.modern {
		m[wire.MetaProtocolVersion] = wire.Version20260728
		m[wire.MetaClientCapabilities] = map[string]any{}
		m[wire.MetaClientInfo] = map[string]any{"name": "rig", "version": "0"}
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// writeLine writes one line to the server's stdin, bounded.
func (r *rig) writeLine(b []byte) {
	r.t.Helper()
	r.in.W.SetWriteDeadline(time.Now().Add(testBound(r.t)))
	if _, err := r.in.W.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("writing to the server's stdin: %v", err)
	}
}

// send writes a request and returns its id. params may be nil; _meta is
// added in the modern era.
func (r *rig) send(method string, params map[string]any) int64 {
	r.t.Helper()
	r.nextID++
	return r.sendID(r.nextID, method, params)
}

func (r *rig) sendID(id int64, method string, params map[string]any) int64 {
	r.t.Helper()
	p := map[string]any{}
	for k, v := range params {
		p[k] = v
	}
	var extra map[string]any
	if m, ok := p["_meta"].(map[string]any); ok {
		extra = m
	}
	if meta := r.meta(extra); len(meta) > 0 {
		p["_meta"] = meta
	}
	r.writeLine(mustJSON(r.t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p}))
	return id
}

// tool sends a tools/call.
func (r *rig) tool(name string, args map[string]any, meta map[string]any) int64 {
	r.t.Helper()
	p := map[string]any{"name": name, "arguments": args}
	if meta != nil {
		p["_meta"] = meta
	}
	return r.send(wire.MethodToolsCall, p)
}

func (r *rig) cancelReq(id int64) {
	r.t.Helper()
	r.writeLine(mustJSON(r.t, map[string]any{"jsonrpc": "2.0", "method": wire.MethodCancelled,
		"params": map[string]any{"requestId": id, "reason": "test"}}))
}

// next reads the next frame from the server's stdout, bounded.
func (r *rig) next() ([]byte, error) {
	r.t.Helper()
	r.out.R.SetReadDeadline(time.Now().Add(testBound(r.t)))
	f, err := r.fr.Next()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		r.t.Fatalf("no frame from the server within %v; report: %+v", testBound(r.t), r.srv.Report())
	}
	return append([]byte(nil), f...), err
}

func (r *rig) nextMsg() *wire.Message {
	r.t.Helper()
	f, err := r.next()
	if err != nil {
		r.t.Fatalf("reading stdout: %v", err)
	}
	m, err := wire.ParseMessage(f)
	if err != nil {
		r.t.Fatalf("frame %.200q: %v", f, err)
	}
	return m
}

// response reads frames until the response to id, failing on any other
// response; notifications are returned too.
func (r *rig) response(id int64) (*wire.Message, []*wire.Message) {
	r.t.Helper()
	var notes []*wire.Message
	for {
		m := r.nextMsg()
		if m.IsNotification() {
			notes = append(notes, m)
			continue
		}
		if got, _ := m.IntID(); got != id || !m.IsResponse() {
			r.t.Fatalf("got %.300s, want the response to id %d", mustJSON(r.t, m), id)
		}
		return m, notes
	}
}

func (r *rig) call(method string, params map[string]any) *wire.Message {
	r.t.Helper()
	m, _ := r.response(r.send(method, params))
	return m
}

func (r *rig) callTool(name string, args map[string]any) *wire.Message {
	r.t.Helper()
	m, _ := r.response(r.tool(name, args, nil))
	return m
}

// waitFor polls cond until it holds, failing after the bound. Polling the
// server's report or a pipe's fill level is waiting for an event the kernel
// or the server exposes only as state.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitForDiag(t, what, cond, func() string { return "" })
}

// waitForDiag is waitFor with a diagnosis for the failure message.
func waitForDiag(t testing.TB, what string, cond func() bool, diag func() string) {
	t.Helper()
	deadline := time.Now().Add(testBound(t))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s\n%s", testBound(t), what, diag())
		}
		<-tick.C
	}
}

func (r *rig) waitReport(what string, cond func(Report) bool) Report {
	r.t.Helper()
	var rep Report
	waitFor(r.t, what, func() bool { rep = r.srv.Report(); return cond(rep) })
	return rep
}

func (r *rig) waitStdoutFull() {
	r.t.Helper()
	waitFor(r.t, "the server's stdout pipe to be full", func() bool {
		full, err := r.out.Full()
		if err != nil {
			r.t.Fatal(err)
		}
		return full
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// result decodes a response's result; it fails on an error response.
func result(t testing.TB, m *wire.Message) map[string]any {
	t.Helper()
	if m.Error != nil {
		t.Fatalf("response %s: error %v", m.ID, m.Error)
	}
	var v map[string]any
	if err := json.Unmarshal(m.Result, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// text returns the concatenated text content of a tool result.
func text(t testing.TB, m *wire.Message) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func requestByID(rep Report, id int64) (RequestRecord, bool) {
	for _, q := range rep.Requests {
		if q.ID == fmt.Sprint(id) {
			return q, true
		}
	}
	return RequestRecord{}, false
}

func cancelByID(rep Report, id int64) (CancelRecord, bool) {
	for _, c := range rep.Cancels {
		if c.ID == fmt.Sprint(id) {
			return c, true
		}
	}
	return CancelRecord{}, false
}

var progressMeta = map[string]any{"progressToken": "p"}

// needLinux skips a test that sets pipe capacities (F_SETPIPE_SZ).
func needLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skipf("setting pipe capacity needs Linux, not %s", runtime.GOOS)
	}
}

// needShell skips a test whose subprocess is the default sh script.
func needShell(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the default subprocess script needs sh, head and tr, not on windows")
	}
}
