package proxy_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestFaultHoldingVerdict: a stop fault holding the server's
// output is named as the proxy's own, with the bytes waiting in the
// server's pipe, and its time is counted apart from blocked writes.
func TestFaultHoldingVerdict(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "bytes", fmt.Sprint(1<<20), filepath.Join(t.TempDir(), "in")), proxy.Config{
		Stuck: 50 * time.Millisecond, Faults: []record.Fault{mustFault(t, "out:stop:after_bytes=100KiB,for=400ms")},
	})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	e := r.rec.wait(t, "fault-holding verdict", verdictOf(record.VerdictFaultHolding))
	want := []string{"the proxy's fault out:stop:after_bytes=102400,for=400ms is holding the server's stdout"}
	if runtime.GOOS == "linux" {
		want = append(want, "waiting in the server's stdout pipe", "the server is blocked writing")
	}
	for _, w := range want {
		if !strings.Contains(e.Verdict.Text, w) {
			t.Errorf("verdict %q does not say %q", e.Verdict.Text, w)
		}
	}
	r.stdin.Close()
	res := r.wait()
	out()
	if m := res.Status.Metrics; m.HeldOutUS < (300 * time.Millisecond).Microseconds() {
		t.Errorf("held_out_us %d, want the stop's 400ms counted", m.HeldOutUS)
	}
}

// TestHostResponseAttributed: a response the host sends to
// an id the server never used is the host's, not the server's.
func TestHostResponseAttributed(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":99,"result":{}}` + "\n"))
	r.rec.wait(t, "the host's response", func(e record.Event) bool { return e.Ev == record.EvFrame && e.Dir == record.DirIn })
	r.stdin.Close()
	res := r.wait()
	out()
	m := res.Status.Metrics
	var text string
	for _, v := range res.Verdicts {
		if v.Kind == record.VerdictUnknownResponse {
			text = v.Text
		}
	}
	if m.UnknownResponses != 0 || m.HostUnknownResponses != 1 || !strings.HasPrefix(text, "the host sent 1 response") {
		t.Errorf("metrics %d server, %d host unknown responses; verdict %q: want the host's one", m.UnknownResponses, m.HostUnknownResponses, text)
	}
}

// TestTinyWritesKeepDetail: a host that writes one byte at a
// time loses no detail: small reads are copied, not given a pool buffer
// each.
func TestTinyWritesKeepDetail(t *testing.T) {
	t.Parallel()
	var in bytes.Buffer
	for i := 0; in.Len() < 64<<10; i++ {
		fmt.Fprintf(&in, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", i)
	}
	report := filepath.Join(t.TempDir(), "in")
	r := startRig(t, helperCmd(t, "bytes", "0", report), proxy.Config{})
	drain(t, r.stdout)
	drain(t, r.stderr)
	for _, b := range in.Bytes() {
		if _, err := r.stdin.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	r.stdin.Close()
	res := r.wait()
	if m := res.Status.Metrics; m.DroppedBytes != 0 || m.DroppedEvents != 0 || m.StdinFrames != int64(bytes.Count(in.Bytes(), []byte("\n"))) {
		t.Errorf("metrics %+v: want every frame seen, nothing dropped", m)
	}
}

// TestBodiesBuffer: with LogBodies the observer gets the larger buffer by
// default, so that a record meant for replay keeps its bodies.
func TestBodiesBuffer(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{LogBodies: true})
	drain(t, r.stdout)
	drain(t, r.stderr)
	if got := r.p.Config().ObserverBuffer; got != proxy.DefaultObserverBufferBodies {
		t.Errorf("ObserverBuffer %d with LogBodies, want %d", got, proxy.DefaultObserverBufferBodies)
	}
	r.stdin.Close()
	r.wait()
}

// TestPacingFaultHolding: a slice fault that paces the
// server's output is named as the proxy's own fault holding it, like a
// stop, with its time counted in held_out_us; a pace that would outlast
// the server is ended by the proxy's bounded end.
func TestPacingFaultHolding(t *testing.T) {
	t.Parallel()
	// 128 KiB: the server can write it all into the proxy's chunk and its
	// pipe, and exit, while the pace would take seconds more.
	r := startRig(t, helperCmd(t, "bytes", fmt.Sprint(128<<10), filepath.Join(t.TempDir(), "in")), proxy.Config{
		Stuck: 50 * time.Millisecond, ExitGrace: 200 * time.Millisecond,
		Faults: []record.Fault{mustFault(t, "out:slice:size=1KiB,delay=20ms")},
	})
	drain(t, r.stdout) // the proxy ends with the pace cut short, and leaves the host's stream to its owner
	drain(t, r.stderr)
	e := r.rec.wait(t, "fault-holding verdict", verdictOf(record.VerdictFaultHolding))
	want := []string{"the proxy's fault out:slice:", "is holding the server's stdout"}
	if runtime.GOOS == "linux" {
		want = append(want, "waiting in the server's stdout pipe")
	}
	for _, w := range want {
		if !strings.Contains(e.Verdict.Text, w) {
			t.Errorf("verdict %q does not say %q", e.Verdict.Text, w)
		}
	}
	r.stdin.Close()
	res := r.wait() // 128 KiB at 1 KiB per 20ms would take 2.6s: the end interrupts it
	if m := res.Status.Metrics; m.HeldOutUS < (50 * time.Millisecond).Microseconds() {
		t.Errorf("held_out_us %d, want the pacing's hold counted", m.HeldOutUS)
	}
}
