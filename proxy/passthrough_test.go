package proxy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestBytesPassExactly sends junk, CRLF, NUL, invalid UTF-8, empty lines,
// a line without a final newline and a 16 MiB line (4 MiB under the race
// detector or with -short; .ci/run runs it at 16 MiB without the detector)
// through the proxy in all three directions at once, and compares the
// hashes of what arrived with what was sent, on each forwarding path.
func TestBytesPassExactly(t *testing.T) { onEachPath(t, testBytesPassExactly) }

func testBytesPassExactly(t *testing.T, path string) {
	// 16 MiB is a thousand times a 16 KiB pipe and 256 times Linux's
	// default one: every buffer on the way fills and drains many times;
	// 4 MiB, 64 times the default pipe, still does.
	long := 16 << 20
	if testing.Short() || raceEnabled {
		long = 4 << 20
	}
	report := filepath.Join(t.TempDir(), "stdin.txt")
	r := startRig(t, helperCmd(t, "bytes", fmt.Sprint(long), report), proxy.Config{})
	out := drain(t, r.stdout)
	errs := drain(t, r.stderr)
	in := streamBytes("in", long)
	go func() {
		r.stdin.Write(in)
		r.stdin.Close()
	}()
	res := r.wait()
	wantOut, wantErr := streamBytes("out", long), streamBytes("err", long/4)
	if n, h := out(); n != int64(len(wantOut)) || h != sum(wantOut) {
		t.Errorf("host got %d bytes of stdout with sha256 %s, want %d bytes with %s", n, h, len(wantOut), sum(wantOut))
	}
	if n, h := errs(); n != int64(len(wantErr)) || h != sum(wantErr) {
		t.Errorf("host got %d bytes of stderr with sha256 %s, want %d bytes with %s", n, h, len(wantErr), sum(wantErr))
	}
	got, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d %s", len(in), sum(in)); string(got) != want {
		t.Errorf("server got stdin %q, want %q", got, want)
	}
	if res.Exit.Status != 0 {
		t.Errorf("server exit %+v, want status 0", res.Exit)
	}
	m := res.Status.Metrics
	if m.StdinBytes != int64(len(in)) || m.StdoutBytes != int64(len(wantOut)) || m.StderrBytes != int64(len(wantErr)) {
		t.Errorf("metrics count %d/%d/%d bytes in/out/err, want %d/%d/%d", m.StdinBytes, m.StdoutBytes, m.StderrBytes, len(in), len(wantOut), len(wantErr))
	}
	wantPath(t, r.p, path, int(proxy.DIn), int64(len(in)))
	wantPath(t, r.p, path, int(proxy.DOut), int64(len(wantOut)))
	wantPath(t, r.p, path, int(proxy.DErr), int64(len(wantErr)))
	// Every byte is in exactly one chunk event of its direction, in order;
	// chunks the observer missed are marked as a gap, and a drop event
	// says so.
	gaps := 0
	for _, dir := range []string{record.DirIn, record.DirOut, record.DirErr} {
		var next int64
		for _, e := range r.rec.find(func(e record.Event) bool { return e.Ev == record.EvChunk && e.Dir == dir }) {
			if e.Off != next {
				t.Fatalf("%s chunk at offset %d, want %d", dir, e.Off, next)
			}
			next += e.N
			if e.Gap {
				gaps++
			}
		}
		want := map[string]int{record.DirIn: len(in), record.DirOut: len(wantOut), record.DirErr: len(wantErr)}[dir]
		if next != int64(want) {
			t.Errorf("%s chunk events cover %d bytes, want %d", dir, next, want)
		}
	}
	if drops := r.rec.find(isEv(record.EvDrop)); gaps > 0 && len(drops) == 0 {
		t.Errorf("%d chunk events are gaps, and no drop event says why", gaps)
	}
}
