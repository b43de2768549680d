package proxy_test

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestExitStatus: the proxy reports the server's exit status, and 128+n for
// a server killed by signal n, as a shell would.
func TestExitStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args   []string
		status int
		signal string
	}{
		{[]string{"0"}, 0, ""},
		{[]string{"3"}, 3, ""},
		{[]string{"signal", "now"}, 128 + 9, "SIGKILL"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if tc.signal != "" && runtime.GOOS == "windows" {
				t.Skip("no signals on windows")
			}
			r := startRig(t, helperCmd(t, "exit", tc.args...), proxy.Config{})
			drain(t, r.stdout)
			drain(t, r.stderr)
			r.stdin.Close()
			res := r.wait()
			if res.Exit.Status != tc.status || res.Exit.Signal != tc.signal {
				t.Errorf("exit %+v, want status %d, signal %q", res.Exit, tc.status, tc.signal)
			}
			e := r.rec.wait(t, "exit", isEv(record.EvExit))
			if e.Status != res.Exit.Text || (tc.signal == "") != (e.Exit != nil) {
				t.Errorf("exit event %+v does not match %+v", e, res.Exit)
			}
		})
	}
}

// TestSignalPassedOn: a signal given to the proxy reaches the server, which
// dies of it; the record says so.
func TestSignalPassedOn(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on windows")
	}
	r := startRig(t, helperCmd(t, "exit", "0"), proxy.Config{})
	drain(t, r.stdout)
	drain(t, r.stderr)
	if err := r.p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	res := r.wait()
	if res.Exit.Signal != "SIGTERM" || res.Exit.Status != 128+15 {
		t.Errorf("exit %+v, want killed by SIGTERM, status 143", res.Exit)
	}
	e := r.rec.wait(t, "signal", isEv(record.EvSignal))
	if e.Signal != "SIGTERM" || e.Err != "" {
		t.Errorf("signal event %+v, want SIGTERM passed on", e)
	}
}

// TestEOFHostCloses: when the host closes the server's stdin, the server
// sees the end after every byte, and the record says who closed first.
func TestEOFHostCloses(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{})
	drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	r.stdin.Close()
	res := r.wait()
	if res.Exit.Status != 0 {
		t.Errorf("exit %+v, want 0 after stdin ended", res.Exit)
	}
	var kinds []string
	for _, e := range r.rec.all() {
		if e.Ev == record.EvEOF || e.Ev == record.EvClose || e.Ev == record.EvExit {
			kinds = append(kinds, e.Ev+" "+e.Dir)
		}
	}
	if len(kinds) < 2 || kinds[0] != "eof in" || kinds[1] != "close in" {
		t.Errorf("lifecycle events %q, want the host's end of stdin first, passed on", kinds)
	}
}

// TestEOFServerClosesStdout: a server that closes its stdout early: the
// host sees the end of stdout while the server still runs.
func TestEOFServerClosesStdout(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake", "-close-stdout-after", "1"), proxy.Config{})
	out := drain(t, r.stdout)
	drain(t, r.stderr)
	r.stdin.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	if n, _ := out(); n == 0 {
		t.Error("host got no stdout before its end")
	}
	r.rec.wait(t, "eof out", func(e record.Event) bool { return e.Ev == record.EvEOF && e.Dir == record.DirOut })
	if st := r.p.Status(); !st.Running {
		t.Errorf("the server exited; want it running after closing its stdout")
	}
	r.stdin.Close()
	r.wait()
}

// TestEOFHostStopsReading: a host that closes its end of stdout makes the
// proxy's write fail; the proxy closes the server's stdout, so the server's
// next write fails too, as it would have without the proxy, on each
// forwarding path.
func TestEOFHostStopsReading(t *testing.T) {
	onEachPath(t, func(t *testing.T, path string) { testEOFHostStopsReading(t) })
}

func testEOFHostStopsReading(t *testing.T) {
	r := startRig(t, helperCmd(t, "bytes", "1048576", t.TempDir()+"/in"), proxy.Config{})
	r.stdout.Close()
	drain(t, r.stderr)
	e := r.rec.wait(t, "close out", func(e record.Event) bool { return e.Ev == record.EvClose && e.Dir == record.DirOut })
	if !strings.Contains(e.Text, "writing the host's stdout failed; closed the server's stdout to pass it back") || !strings.Contains(e.Err, "broken pipe") {
		t.Errorf("close event %+v, want the failed write passed back", e)
	}
	r.stdin.Close()
	r.wait()
}

// TestEOFServerStopsReading: a server that closes its stdin makes the
// proxy's write fail; the proxy closes the host's stdin, so the host's next
// write fails too.
func TestEOFServerStopsReading(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "exit", "close-stdin"), proxy.Config{})
	drain(t, r.stdout)
	drain(t, r.stderr)
	// The first writes reach the proxy, whose write to the server fails;
	// the proxy then closes its end, and the host's write fails. The
	// proxy reads whatever is written until then, so no write blocks.
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		_, err = r.stdin.Write(make([]byte, 4<<10))
	}
	if !errors.Is(err, syscall.EPIPE) {
		t.Errorf("host write after the server closed its stdin: %v, want EPIPE", err)
	}
	e := r.rec.wait(t, "close in", func(e record.Event) bool { return e.Ev == record.EvClose && e.Dir == record.DirIn })
	if !strings.Contains(e.Text, "writing the server's stdin failed; closed the host's stdin to pass it back") {
		t.Errorf("close event %+v, want the failed write passed back", e)
	}
}

// TestRecordOrder: the record is in the order things
// happened, for every kind of ending: one sequence without gaps, a
// direction's traffic before its end, the summary last, and what caused
// the server's exit before the exit.
func TestRecordOrder(t *testing.T) {
	t.Parallel()
	ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	for _, tc := range []struct {
		name   string
		args   []string
		cfg    proxy.Config
		end    func(r *rig)
		before []string // events (ev dir) that must come before the exit, in this order
	}{
		{"host closes first", []string{"fake"}, proxy.Config{}, func(r *rig) { r.stdin.Close() }, []string{"eof in", "close in"}},
		{"server exits first", []string{"exit", "3", "now"}, proxy.Config{}, func(r *rig) {}, nil},
		{"signal", []string{"fake"}, proxy.Config{}, func(r *rig) { r.p.Signal(syscall.SIGTERM) }, []string{"signal "}},
		{"fault", []string{"fake"}, proxy.Config{Faults: []record.Fault{mustFault(t, "in:close:after_method=ping")}}, func(r *rig) {}, []string{"fault in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "signal" && runtime.GOOS == "windows" {
				t.Skip("no SIGTERM on windows")
			}
			r := startRig(t, helperCmd(t, tc.args[0], tc.args[1:]...), tc.cfg)
			out := drain(t, r.stdout)
			drain(t, r.stderr)
			r.stdin.Write(ping)
			if tc.name != "fault" && tc.args[0] == "fake" {
				r.rec.wait(t, "the response", func(e record.Event) bool { return e.Ev == record.EvFrame && e.Dir == record.DirOut })
			}
			tc.end(r)
			r.wait()
			out()
			evs := r.rec.all()
			ended := map[string]bool{}
			exit := -1
			for i, e := range evs {
				if e.Seq != int64(i) {
					t.Fatalf("event %d has seq %d: the record is not one sequence", i, e.Seq)
				}
				if (e.Ev == record.EvChunk || e.Ev == record.EvFrame) && ended[e.Dir] {
					t.Errorf("%s %s (seq %d) after the end of %s", e.Ev, e.Dir, e.Seq, e.Dir)
				}
				if e.Ev == record.EvEOF {
					ended[e.Dir] = true
				}
				if e.Ev == record.EvExit {
					exit = i
				}
			}
			if exit < 0 || evs[len(evs)-1].Ev != record.EvSummary {
				t.Fatalf("no exit event, or the record ends with %s, not the summary", evs[len(evs)-1].Ev)
			}
			at := 0
			for _, e := range evs[:exit] {
				if at < len(tc.before) && e.Ev+" "+e.Dir == tc.before[at] {
					at++
				}
			}
			if at < len(tc.before) {
				t.Errorf("before the exit the record lacks %q in this order: %s", tc.before[at:], kinds(evs))
			}
		})
	}
}

// kinds lists the events other than chunks and frames, for a failure.
func kinds(evs []record.Event) string {
	var s []string
	for _, e := range evs {
		if e.Ev != record.EvChunk && e.Ev != record.EvFrame {
			s = append(s, e.Ev+" "+e.Dir)
		}
	}
	return strings.Join(s, ", ")
}

// TestCloseWaitConcurrent: Close and Wait called at once from
// several goroutines, repeatedly, all return, with the same result.
func TestCloseWaitConcurrent(t *testing.T) {
	t.Parallel()
	r := startRig(t, helperCmd(t, "fake"), proxy.Config{})
	drain(t, r.stdout)
	drain(t, r.stderr)
	results := make(chan *proxy.Result, 8)
	for i := range 8 {
		go func() {
			if i%2 == 0 {
				r.p.Close()
			}
			res, _ := r.p.Wait()
			results <- res
		}()
	}
	deadline := time.After(bound(t))
	var first *proxy.Result
	for range 8 {
		select {
		case res := <-results:
			if first == nil {
				first = res
			} else if res != first {
				t.Errorf("Wait returned different results")
			}
		case <-deadline:
			t.Fatal("Close and Wait called together did not all return")
		}
	}
	r.wait()
}
