//go:build unix

package mcptest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// TestStdoutHeldByEscapedProcess: a server that exits while a process it
// started in a session of its own holds its stdout open. Requests fail
// within the grace period saying so, Close names the holder and returns
// within its bound.
func TestStdoutHeldByEscapedProcess(t *testing.T) {
	t.Parallel() // it waits (graces, bounds): side by side with the other waiting tests
	if runtime.GOOS != "linux" {
		t.Skip("names the holder through /proc/*/fd: Linux only")
	}
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid (util-linux)")
	}
	pidFile := filepath.Join(t.TempDir(), "holder.pid")
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	const grace = 300 * time.Millisecond
	// The holder, in a session of its own, writes its pid, then becomes
	// "sleep 1000". The server waits until it has escaped (until then it is
	// in the server's process group, which mcptest kills once the server
	// exits), reads one line, then exits, leaving the holder with its
	// stdout.
	script := `setsid -f sh -c 'echo $$ > "$0.tmp"; mv "$0.tmp" "$0"; exec sleep 1000' "$1"; until [ -s "$1" ]; do sleep 0.01; done; read line; exit 0`
	s, err := mcptest.Start(t.Context(), mcptest.Command("sh", "-c", script, "sh", pidFile), mcptest.WithoutHandshake(), mcptest.WithGrace(grace))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Call(t.Context(), wire.MethodPing, nil)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "still held open by another process") || !strings.Contains(err.Error(), "sleep 1000") {
		t.Errorf("Call = %v, want an error saying the ended server's stdout is held open, naming sleep 1000", err)
	}
	if took > 5*time.Second {
		t.Errorf("the call failed after %v, want within about the grace period (%v) of the exit", took, grace)
	}
	if !strings.Contains(s.Diagnose(), "verdict: the server has ended (exited, exit code 0) but its stdout is still held open") {
		t.Errorf("Diagnose:\n%s", s.Diagnose())
	}
	start = time.Now()
	err = s.Close()
	if d := time.Since(start); d > 7*grace+time.Second {
		t.Errorf("Close took %v, want at most its bound of about 7×grace", d)
	}
	if err == nil || !regexp.MustCompile(`its stdout \(held by pid \d+: sleep 1000\) and stderr \(held by pid \d+: sleep 1000\) still open`).MatchString(err.Error()) {
		t.Errorf("Close = %v, want it to name the process holding stdout and stderr", err)
	}
}
