package proxy_test

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestFaultHoldEndsWithSession: a fault holds the server no longer than
// the session. A real server that ends only once it has written all its
// output and read all its input (bytesServer: 4 MiB in one write, then
// stdin to its end) is held by a fault; the host then ends the session (it
// closes the proxy's stdin and waits, or has SIGTERM passed on) or closes
// its end of stdout, and the fault lets go, its end recorded with its
// reason, and the proxy ends. Without that rule each of these proxies runs
// for as long as the fault says (an hour, or forever), the server blocked
// by it.
func TestFaultHoldEndsWithSession(t *testing.T) {
	t.Parallel()
	const grace = 200 * time.Millisecond
	closeStdin := func(r *rig) { r.stdin.Close() }
	for _, tc := range []struct {
		name, fault string
		held        func(*rig) // waits until the fault holds the server
		end         func(*rig) // what the host does
		drain       bool       // the host reads its stdout from the start
		want        string     // the fault's end, in the record
	}{
		{"stop until the end", "out:stop", outFull, closeStdin, true,
			"reading the server's stdout again: the host closed the proxy's stdin 200ms ago and the server still runs"},
		{"stop for an hour", "out:stop:for=1h", outFull, closeStdin, true,
			"reading the server's stdout again: the host closed the proxy's stdin"},
		// The host reads only once the fault let go: until then, the
		// proxy could not have ended without the fault's end.
		{"stop until the end, host not reading", "out:stop", outFull, closeStdin, false,
			"reading the server's stdout again: the host closed the proxy's stdin"},
		{"latency of an hour", "out:latency:delay=1h", outFull, closeStdin, true,
			"forwarding at full speed: the host closed the proxy's stdin"},
		{"bandwidth", "out:bandwidth:rate=100", outFull, closeStdin, true,
			"forwarding at full speed: the host closed the proxy's stdin"},
		// The proxy does not read its stdin meanwhile: it sees the host
		// close it by the pipe's hangup.
		{"stop of stdin until the end", "in:stop:after_bytes=10", faultFired("stopped reading the host's stdin"), closeStdin, true,
			"reading the host's stdin again: the host closed the proxy's stdin"},
		{"sigstop for an hour, SIGTERM", "sigstop:for=1h", faultFired("stopped the server"), func(r *rig) { r.p.Signal(syscall.SIGTERM) }, true,
			"continued the server (SIGCONT): the proxy passed on SIGTERM 200ms ago and the server still runs"},
		{"sigstop for an hour, stdin closed", "sigstop:for=1h", faultFired("stopped the server"), closeStdin, true,
			"continued the server (SIGCONT): the host closed the proxy's stdin"},
		// No one will read what the stop holds: it ends at once, and the
		// server finds its stdout closed.
		{"stop until the end, host closes stdout", "out:stop", outFull, func(r *rig) { r.stdout.Close() }, false,
			"reading the server's stdout again: the host closed its end of the proxy's stdout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := startRig(t, helperCmd(t, "bytes", "4194304", filepath.Join(t.TempDir(), "in")), proxy.Config{ExitGrace: grace, Faults: []record.Fault{mustFault(t, tc.fault)}})
			if tc.drain {
				drain(t, r.stdout)
			}
			drain(t, r.stderr)
			r.stdin.Write(bytes.Repeat([]byte("x"), 100))
			tc.held(r)
			start := r.p.Status().Start
			endUS := time.Since(start).Microseconds() // in record time, before the host acts
			tc.end(r)
			ev := r.rec.wait(t, "the fault's end", faultEvent(tc.want))
			// Until ExitGrace after the host ended the session the fault
			// held as configured (a server that exits meanwhile is seen
			// doing so).
			if held := time.Duration(ev.T-endUS) * time.Microsecond; !strings.Contains(tc.want, "closed its end") && held < grace {
				t.Errorf("the fault let go %v after the host ended the session, before ExitGrace (%v)", held, grace)
			}
			if !tc.drain && !strings.Contains(tc.want, "closed its end") {
				drain(t, r.stdout)
			}
			r.stdin.Close()
			r.wait()
		})
	}
}

// outFull waits until the server is blocked writing its stdout: its pipe,
// which the fault keeps the proxy from reading, is full.
func outFull(r *rig) {
	r.t.Helper()
	poll.Wait(r.t, bound(r.t), "the server's stdout pipe full", func() bool { full, _ := r.p.ServerStdout().Full(); return full }, nil)
}

func faultFired(text string) func(*rig) {
	return func(r *rig) {
		r.t.Helper()
		r.rec.wait(r.t, "the fault", func(e record.Event) bool { return e.Ev == record.EvFault && strings.HasPrefix(e.Text, text) })
	}
}
