package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
)

// TestShowTellsRunningFromKilled: `show` of the record of a proxy that
// still runs says so, and once the proxy is killed with SIGKILL (no
// summary written) says it is gone and where the record ends, with
// metrics worked out from the events. Linux: the proxy's process is
// looked at in /proc.
func TestShowTellsRunningFromKilled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "r.ndjson")
	p := cmdtest.Start(t, []string{"MCPSTDIO_STATE_DIR=" + dir}, nil, binary, "proxy", "-dir", dir, "-log", log, "--", binary, "fake")
	if got := p.Call(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`); !strings.Contains(got, `"id":1`) {
		t.Fatalf("initialize through the proxy: %q", got)
	}
	running := mcpstdio(t, time.Minute, "show", log)
	for _, want := range []string{"without the proxy's summary: the proxy (pid ", ") is still running (it holds the record open)", "\nmetrics (worked out from the events up to "} {
		if running.code != 0 || !strings.Contains(running.stdout, want) {
			t.Errorf("show while the proxy runs: exit %d, lacks %q:\n%s%s", running.code, want, running.stdout, running.stderr)
		}
	}
	p.Cmd.Process.Signal(syscall.SIGKILL)
	p.Wait(t)
	gone := mcpstdio(t, time.Minute, "show", log)
	for _, want := range []string{") is gone: it was killed (or died) before it could finish the record", "\nmetrics (worked out from the events up to ", "requests 1, responses 1,"} {
		if gone.code != 0 || !strings.Contains(gone.stdout, want) {
			t.Errorf("show after SIGKILL: exit %d, lacks %q:\n%s%s", gone.code, want, gone.stdout, gone.stderr)
		}
	}
}
