package proxy_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func mustFault(t *testing.T, s string) record.Fault {
	t.Helper()
	f, err := proxy.ParseFault(s)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func faultEvent(text string) func(record.Event) bool {
	return func(e record.Event) bool { return e.Ev == record.EvFault && strings.Contains(e.Text, text) }
}

func TestParseFault(t *testing.T) {
	t.Parallel()
	f := mustFault(t, "out:stop:after-bytes=1MiB,for=30s")
	want := record.Fault{Dir: record.DirOut, Kind: "stop", AfterBytes: 1 << 20, For: record.Duration(30 * time.Second)}
	if diff := cmp.Diff(want, f); diff != "" {
		t.Errorf("ParseFault mismatch (-want +got):\n%s", diff)
	}
	if g, err := proxy.ParseFault(f.String()); err != nil || g != f {
		t.Errorf("ParseFault(%q) = %+v, %v; want it back", f.String(), g, err)
	}
	fs, err := proxy.ParseFaults([]byte(`[{"dir":"in","kind":"withhold-cancel"},{"dir":"out","kind":"slice","size":"4KiB","delay":"1ms"}]`))
	if err != nil || len(fs) != 2 || fs[1].Size != 4096 || fs[1].Delay != record.Duration(time.Millisecond) {
		t.Errorf("ParseFaults = %+v, %v", fs, err)
	}
	for _, bad := range []string{
		"out:nosuch", "sideways:stop", "out:stop:for", "out:truncate", "out:slice",
		"out:stop:after_bytes=1,after=1s", "out:latency:delay=1s,size=3", "err:withhold-cancel",
		"out:stop:for=30", `out:drop:method=x,extra=1`, "out:slice:size=-1",
	} {
		if _, err := proxy.ParseFault(bad); err == nil {
			t.Errorf("ParseFault(%q) = nil error, want one", bad)
		}
	}
	// Misspellings get an error that names what is wrong.
	for bad, want := range map[string]string{
		"OUT:STOP:after_bytes=1":              "directions are lower case",
		"out:STOP":                            "kinds are lower case (stop)",
		"xx:stop":                             `direction "xx": want in`,
		"out:stop:after_bytes=99999999999GiB": "over the largest size",
		"out:slice:size=-1":                   "size",
	} {
		if _, err := proxy.ParseFault(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseFault(%q): %v, want an error saying %q", bad, err, want)
		}
	}
}

// TestFaultStopAfterBytes: the proxy stops reading the server's stdout after
// exactly n bytes, for a while, then goes on; every byte still arrives. The
// record holds each read with its offset and time: no read crosses byte n,
// none from n on comes before the stop's end, and the stop lasted its
// `for` at least (how much longer a loaded machine makes it is not the
// fault's to say).
func TestFaultStopAfterBytes(t *testing.T) {
	t.Parallel()
	const n = 1000
	const hold = 200 * time.Millisecond
	r := startRig(t, helperCmd(t, "bytes", "262144", filepath.Join(t.TempDir(), "in")), proxy.Config{Faults: []record.Fault{mustFault(t, "out:stop:after_bytes=1000,for=200ms")}})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	stop := r.rec.wait(t, "stop fault", faultEvent("stopped reading the server's stdout for 200ms"))
	again := r.rec.wait(t, "end of the stop", faultEvent("reading the server's stdout again"))
	r.stdin.Close()
	want := streamBytes("out", 262144)
	if got, h := out(); got != int64(len(want)) || h != sum(want) {
		t.Errorf("host got %d bytes (%s), want %d (%s)", got, h, len(want), sum(want))
	}
	r.wait()
	if again.Text != "reading the server's stdout again" {
		t.Errorf("the stop ended with %q, want its time up", again.Text)
	}
	if held := time.Duration(again.T-stop.T) * time.Microsecond; held < hold {
		t.Errorf("the stop held %v, less than its %v", held, hold)
	}
	upTo := int64(0) // bytes read before the stop
	for _, e := range r.rec.find(isEv(record.EvChunk)) {
		switch {
		case e.Dir != record.DirOut:
		case e.Off < n && e.Off+e.N > n:
			t.Errorf("a read of bytes [%d, %d) crossed the stop's byte %d", e.Off, e.Off+e.N, n)
		case e.Off < n:
			upTo = max(upTo, e.Off+e.N)
		case e.T < again.T:
			t.Errorf("bytes [%d, %d) were read at %dµs, during the stop (%d to %dµs)", e.Off, e.Off+e.N, e.T, stop.T, again.T)
		}
	}
	if upTo != n {
		t.Errorf("the reads before the stop end at byte %d, want exactly %d", upTo, n)
	}
}

// TestFaultStopAfterMethod: the proxy stops reading the host's stdin right
// after a frame with the method; the server gets nothing after it.
func TestFaultStopAfterMethod(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{Faults: []record.Fault{mustFault(t, "in:stop:after_method=notifications/initialized")}})
	drain(t, r.stdout)
	drain(t, r.stderr)
	ping1 := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	notif := `{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	r.stdin.Write([]byte(ping1 + notif + `{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n"))
	r.rec.wait(t, "stop fault", faultEvent("stopped reading the host's stdin until the end"))
	// The fault fires once the frame is written on, and nothing after it is.
	if st := r.p.Status().Streams[proxy.DIn]; st.Delivered != int64(len(ping1)+len(notif)) {
		t.Errorf("the proxy wrote %d bytes to the server's stdin, want exactly %d: through the notification and no further", st.Delivered, len(ping1)+len(notif))
	}
	r.rec.wait(t, "response to ping 1", func(e record.Event) bool {
		return e.Ev == record.EvFrame && e.Dir == record.DirOut && string(e.ID) == "1"
	})
}

func TestFaultPacing(t *testing.T) {
	t.Parallel()
	const size = 256 << 10
	run := func(t *testing.T, fault string) (*rig, record.Event, record.Event) {
		r := startRig(t, helperCmd(t, "bytes", "262144", filepath.Join(t.TempDir(), "in")), proxy.Config{Faults: []record.Fault{mustFault(t, fault)}})
		out := drain(t, r.stdout)
		drain(t, r.stderr)
		r.stdin.Close()
		want := streamBytes("out", size)
		if got, h := out(); got != int64(len(want)) || h != sum(want) {
			t.Errorf("host got %d bytes (%s), want %d (%s)", got, h, len(want), sum(want))
		}
		r.wait()
		chunks := r.rec.find(func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirOut })
		return r, chunks[0], chunks[len(chunks)-1]
	}
	t.Run("slice", func(t *testing.T) {
		r, _, _ := run(t, "out:slice:size=1000")
		if w := r.p.Status().Streams[proxy.DOut].Writes; w < size/1000 {
			t.Errorf("%d writes, want at least %d of 1000 bytes", w, size/1000)
		}
	})
	t.Run("latency", func(t *testing.T) {
		r, _, _ := run(t, "out:latency:delay=100ms")
		for _, e := range r.rec.find(func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == record.DirOut }) {
			if e.WT-e.T < 100_000 {
				t.Errorf("chunk %+v written %dµs after it was read, want at least 100ms", e, e.WT-e.T)
			}
		}
	})
	t.Run("bandwidth", func(t *testing.T) {
		_, first, last := run(t, "out:bandwidth:rate=1MiB")
		if d := last.WT - first.T; d < 240_000 {
			t.Errorf("256 KiB at 1 MiB/s took %dµs, want about 250ms", d)
		}
	})
}

// TestFaultTruncate: the host gets exactly n bytes, then the end.
func TestFaultTruncate(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "bytes", "262144", filepath.Join(t.TempDir(), "in")), proxy.Config{Faults: []record.Fault{mustFault(t, "out:truncate:after_bytes=100")}})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Close()
	want := streamBytes("out", 262144)[:100]
	if got, h := out(); got != 100 || h != sum(want) {
		t.Errorf("host got %d bytes (%s), want the first 100 (%s)", got, h, sum(want))
	}
	r.rec.wait(t, "truncate fault", faultEvent("closed the host's stdout; discarding the rest of the server's stdout"))
	res := r.wait()
	if res.Status.Streams[proxy.DOut].Read != int64(len(streamBytes("out", 262144))) {
		t.Errorf("the proxy read %d bytes of the server's stdout, want all (discarded)", res.Status.Streams[proxy.DOut].Read)
	}
}

// TestFaultClose: closing the server's stdin after a method ends a server
// that stops at EOF.
func TestFaultClose(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{Faults: []record.Fault{mustFault(t, "in:close:after_method=ping")}})
	drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	res := r.wait() // the host's stdin stays open: only the fault ends the server
	if res.Exit.Status != 0 {
		t.Errorf("exit %+v, want 0 after stdin ended", res.Exit)
	}
	r.rec.wait(t, "close fault", faultEvent("closed the server's stdin"))
}

// TestFaultWithholdCancel: the host's cancel never reaches the server.
func TestFaultWithholdCancel(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "report.json")
	target, h := throughProxy(t, proxy.Config{Faults: []record.Fault{mustFault(t, "in:withhold-cancel")}}, "fake", "-report", report)
	s := mcptest.StartServer(t, target)
	call := s.Send("tools/call", map[string]any{"name": "slow", "arguments": map[string]any{"steps": 3, "intervalMs": 50}})
	if err := call.Cancel("test"); err != nil {
		t.Fatal(err)
	}
	h.rec.wait(t, "withhold fault", faultEvent("dropped a notifications/cancelled frame"))
	if _, err := call.Wait(ctxFor(t)); err != nil {
		t.Fatal(err) // the server did not see the cancel: it answers
	}
	rep, err := fakeserver.ReadReportFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cancels) != 0 {
		t.Errorf("the server saw %d cancels, want none", len(rep.Cancels))
	}
	if c := h.rec.find(isEv(record.EvCancel)); len(c) != 1 {
		t.Errorf("%d cancel events, want the host's one recorded", len(c))
	}
}

// TestFaultDuplicate: the server gets the request twice, and the host a
// second response to an id it no longer waits for.
func TestFaultDuplicate(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "report.json")
	target, h := throughProxy(t, proxy.Config{Faults: []record.Fault{mustFault(t, "in:duplicate:method=tools/call,count=1")}}, "fake", "-report", report)
	s := mcptest.StartServer(t, target)
	// The first of the two responses answers the call (the fake may answer
	// the copy with a duplicate-id error first); the second is unknown.
	if _, err := s.Send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}}).Wait(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	h.rec.wait(t, "unknown-response verdict", verdictOf(record.VerdictUnknownResponse))
	// The fake rewrites its report as it goes: read it once the fake has
	// ended, when it holds both calls.
	if err := s.CloseStdin(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitExit(ctxFor(t)); err != nil {
		t.Fatal(err)
	}
	rep, err := fakeserver.ReadReportFile(report)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, r := range rep.Requests {
		if r.Method == "tools/call" {
			calls++
		}
	}
	if calls != 2 {
		t.Errorf("the server got %d tools/call, want 2", calls)
	}
}

// TestFaultSIGSTOP: a stopped server answers only once it is continued.
func TestFaultSIGSTOP(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGSTOP on windows")
	}
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{Faults: []record.Fault{mustFault(t, "sigstop:for=200ms")}})
	drain(t, r.stdout)
	drain(t, r.stderr)
	stopped := r.rec.wait(t, "sigstop", faultEvent("stopped the server (SIGSTOP)"))
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	resp := r.rec.wait(t, "response", func(e record.Event) bool { return e.Ev == record.EvFrame && e.Dir == record.DirOut })
	cont := r.rec.wait(t, "sigcont", faultEvent("continued the server (SIGCONT)"))
	if resp.T < cont.T || cont.T-stopped.T < 200_000 {
		t.Errorf("stopped at %dµs, continued at %dµs, answered at %dµs: want the answer after 200ms of stop\n%s", stopped.T, cont.T, resp.T, r.rec.text())
	}
	r.stdin.Close()
	r.wait()
}
