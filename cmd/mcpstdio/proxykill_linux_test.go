package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"github.com/mcpstdio/mcpstdio/record"
)

// killRuns is how many sessions TestProxyKilledLikeCodex ends each way:
// a few in the suite; MCPSTDIO_KILL_RUNS=100 for a stress run.
func killRuns() int {
	if n, err := strconv.Atoi(os.Getenv("MCPSTDIO_KILL_RUNS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// TestProxyKilledLikeCodex (Linux): a host that ends its server as Codex
// does, SIGTERM to the process group it started the proxy in and SIGKILL
// to the proxy 25 ms later, leaves a record that reads whole, with every
// response the host got (each in the file before the SIGTERM, with no
// summary) and, in a stall, the block that held the host's output and
// ticks up to the kill; and the proxy's status file is stale at once,
// never listed as running. Each way: a short session, and one stalled in
// a large result the host stopped reading.
func TestProxyKilledLikeCodex(t *testing.T) {
	t.Parallel()
	var subtests []testkit.Subtest
	for _, stall := range []bool{false, true} {
		subtests = append(subtests, testkit.Subtest{Name: map[bool]string{false: "short", true: "stalled"}[stall], F: func(t *testing.T) {
			for i := range killRuns() {
				codexKill(t, i, stall)
			}
		}})
	}
	testkit.AtOnce(t, subtests...) // they wait (a session, the kill): not queued behind the package's other tests
}

// codexKill runs one session through the proxy and ends it as Codex does,
// then checks the record and the status file it left.
func codexKill(t *testing.T, run int, stall bool) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "rec.ndjson")
	ctx, cancel := context.WithTimeout(t.Context(), cmdtest.Bound(t))
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "proxy", "-dir", dir, "-log", log, "--", binary, "fake")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as Codex starts a server
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	br := bufio.NewReaderSize(out, 64<<10)
	got := 0 // responses the host read whole
	call := func(line string) {
		t.Helper()
		if _, err := io.WriteString(in, line+"\n"); err != nil {
			t.Fatalf("run %d: writing %s: %v", run, line, err)
		}
		_, err := br.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a line longer than the buffer
			_, err = br.ReadSlice('\n')
		}
		if err != nil {
			t.Fatalf("run %d: reading the answer to %s: %v", run, line, err)
		}
		got++
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"codex-like","version":"1"}}}`)
	io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	call(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"big","arguments":{"bytes":262144}}}`)
	call(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if stall {
		// The host stops reading during a large result, then gives up
		// on it: the proxy's write to it blocks; the record says so, and
		// ticks while nothing else happens.
		io.WriteString(in, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"big","arguments":{"bytes":8388608}}}`+"\n")
		waitRecord(t, log, func(e record.Event) bool { return e.Ev == record.EvTick && e.T > 0 })
		io.WriteString(in, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"the host gave up"}}`+"\n")
	}
	// The record is written as things happen, with no summary needed:
	// the host's last answer reaches the file within milliseconds on an
	// idle machine. On a loaded one the proxy may get no CPU for longer
	// than Codex's 25 ms, so the test waits for it (bounded) and logs
	// how long that took, rather than lose the last events to the load.
	answered := time.Now()
	waitRecord(t, log, func(e record.Event) bool {
		return e.Ev == record.EvFrame && e.Dir == record.DirOut && string(e.ID) == "3"
	})
	if d := time.Since(answered); d > 25*time.Millisecond {
		t.Logf("run %d: the last answer reached the record %v after the host read it", run, d.Round(time.Millisecond))
	}
	signalled := time.Now()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	time.Sleep(25 * time.Millisecond) // Codex's own delay: the kill is timed, not an event to wait on
	syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()

	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var evs []record.Event
	var start time.Time
	if err := record.Read(bytes.NewReader(b), func(e record.Event) error {
		if e.Ev == record.EvHeader {
			start = e.Header.Start
		}
		evs = append(evs, e)
		return nil
	}); err != nil {
		t.Errorf("run %d: the killed proxy's record does not read whole: %v", run, err)
	}
	responses, blocked := 0, false
	for _, e := range evs {
		if e.Ev == record.EvFrame && e.Dir == record.DirOut && e.Kind == record.KindResponse {
			responses++
		}
		blocked = blocked || e.Ev == record.EvBlock && e.Dir == record.DirOut
	}
	if responses < got {
		var seen []string
		for _, e := range evs {
			if e.Ev == record.EvFrame && e.Dir == record.DirOut {
				seen = append(seen, fmt.Sprintf("%s %s %s", e.Kind, e.ID, e.Head[:min(len(e.Head), 60)]))
			}
		}
		var tail []string
		for _, e := range evs[max(len(evs)-6, 0):] {
			tail = append(tail, fmt.Sprintf("%s %s at %+.1fms", e.Ev, e.Dir, float64(start.Add(time.Duration(e.T)*time.Microsecond).Sub(signalled).Microseconds())/1000))
		}
		t.Errorf("run %d: the record has %d responses, the host got %d: %q; the record ends (times from the SIGTERM): %s", run, responses, got, seen, strings.Join(tail, ", "))
	}
	if stall {
		// The record's last event is at most a status interval (and the
		// time a loaded machine takes to run the proxy) before the
		// SIGTERM: the ticks go on while the host does not read.
		last := start.Add(time.Duration(evs[len(evs)-1].T) * time.Microsecond)
		if !blocked || signalled.Sub(last) > 2*time.Second {
			t.Errorf("run %d: the record ends %v before the SIGTERM (block recorded: %v); want the block, and ticks to the end", run, signalled.Sub(last).Round(time.Millisecond), blocked)
		}
	}
	ents, err := state.ReadStatuses(dir, killed)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Err != nil || !e.Stale {
			t.Errorf("run %d: the killed proxy's status file %s: err %v, stale %v; want it stale", run, e.Path, e.Err, e.Stale)
		}
	}
	if r := mcpstdio(t, time.Minute, "status", "-dir", dir); !strings.Contains(r.stdout, "no running mcpstdio proxy") {
		t.Errorf("run %d: status lists the killed proxy as running:\n%s", run, r.stdout)
	}
}

// waitRecord waits until the record file at path holds an event that
// satisfies pred in its whole lines.
func waitRecord(t *testing.T, path string, pred func(record.Event) bool) {
	t.Helper()
	poll.Wait(t, cmdtest.Bound(t), fmt.Sprintf("an event in %s", path), func() bool {
		b, _ := os.ReadFile(path)
		b = b[:bytes.LastIndexByte(b, '\n')+1]
		found := false
		if len(b) > 0 {
			record.Read(bytes.NewReader(b), func(e record.Event) error {
				found = found || pred(e)
				return nil
			})
		}
		return found
	}, func() string {
		// What the record holds instead: its last events.
		b, _ := os.ReadFile(path)
		var tail []string
		record.Read(bytes.NewReader(b[:bytes.LastIndexByte(b, '\n')+1]), func(e record.Event) error {
			tail = append(tail, fmt.Sprintf("%s %s %s %s %s n=%d gap=%v", e.Ev, e.Dir, e.Kind, e.ID, e.Text, e.N, e.Gap))
			tail = tail[max(len(tail)-12, 0):]
			return nil
		})
		return fmt.Sprintf("the record (%d bytes) ends with:\n%s", len(b), strings.Join(tail, "\n"))
	})
}
