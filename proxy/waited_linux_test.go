package proxy_test

import (
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// TestHostWriteWaited (Linux: FIONREAD): a cancel the host writes while
// the server does not read its stdin (stopped here) waits in the host's
// pipe, and the proxy reads it only once the server takes what the proxy
// holds: the chunk event that holds it says how many bytes had waited in
// the pipe and when the proxy went back to reading, so its time is known
// to be late. On each forwarding path.
func TestHostWriteWaited(t *testing.T) {
	onPaths(t, []string{"copy", "splice"}, testHostWriteWaited)
}

func testHostWriteWaited(t *testing.T, _ string) {
	cmd := helperCmd(t, "script")
	r := startRig(t, cmd, proxy.Config{})
	r.rec.wait(t, "spawn", isEv(record.EvSpawn))
	pid := r.p.ServerPID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// 100 KiB fill the server's pipe (64 KiB) and, on the copying path,
	// the proxy's chunk; the rest waits in the host's pipe (64 KiB). The
	// cancel comes once the proxy's write to the server is blocked.
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 100<<10) + `"}}` + "\n"
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}` + "\n"
	wrote := make(chan error, 1)
	go func() {
		_, err := io.WriteString(r.stdin, big)
		wrote <- err
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(bound(t)):
		syscall.Kill(pid, syscall.SIGCONT)
		t.Fatalf("the host's write did not fit in the pipes within %v", bound(t))
	}
	block := r.rec.wait(t, "the write to the server's stdin blocked", func(e record.Event) bool { return e.Ev == record.EvBlock && e.Dir == record.DirIn })
	if _, err := io.WriteString(r.stdin, cancel); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	end := int64(len(big) + len(cancel))
	holder := r.rec.wait(t, "the chunk holding the cancel", func(e record.Event) bool {
		return e.Ev == record.EvChunk && e.Dir == record.DirIn && e.Off+e.N == end
	})
	if holder.Waited < int64(len(cancel)) || end > holder.Off+holder.Waited || holder.RT < block.Since || holder.RT > holder.T {
		t.Errorf("the chunk holding the cancel: off %d n %d waited %d rt %d t %d; want it to say the cancel's bytes (to %d) had waited in the pipe, read again at RT between the block (%d) and its read",
			holder.Off, holder.N, holder.Waited, holder.RT, holder.T, end, block.Since)
	}
	r.stdin.Close()
	r.wait()
}
