//go:build linux

package fakeserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestChildUnreadCancel: a cancel the host wrote to the fake's stdin but
// the fake never read, because it was ended first (here it stopped reading
// after the handshake; under a host that sends the cancel and SIGTERM a
// millisecond apart, because it was not scheduled in between), is in the
// report as unread, not lost, whether stdin is a pipe (as most hosts give)
// or a socket (as Node's child_process gives): tee(2) and MSG_PEEK look at
// it without taking it.
func TestChildUnreadCancel(t *testing.T) {
	for _, kind := range []string{"pipe", "socket"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var r, w *os.File
			if kind == "pipe" {
				var err error
				if r, w, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
			} else {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, w = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "host")
			}
			defer w.Close()
			path := filepath.Join(t.TempDir(), "report.json")
			args, _ := json.Marshal([]string{"-report", path, "-stop-reading-after-handshake"})
			cmd := exec.Command(testBinary(t), "-test.run=^TestHelperServeStdio$")
			cmd.Env = append(os.Environ(), envStdioArgs+"="+string(args), "GORACE=atexit_sleep_ms=0")
			cmd.Stdin = r
			cmd.WaitDelay = testBound(t)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			r.Close()
			defer func() { cmd.Process.Kill(); cmd.Wait() }()
			if _, err := w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}` + "\n")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the fake stopped reading", func() bool {
				rep, err := ReadReportFile(path)
				return err == nil && !rep.StdinStopped.IsZero()
			})
			cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"gave up"}}` + "\n"
			if _, err := w.Write([]byte(cancel)); err != nil {
				t.Fatal(err)
			}
			cmd.Process.Signal(syscall.SIGTERM)
			if err := cmd.Wait(); err != nil {
				t.Errorf("the fake ended with %v after SIGTERM", err)
			}
			rep, err := ReadReportFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := []CancelRecord{{ID: "7", Reason: "gave up", State: StateUnknown}}
			if diff := cmp.Diff(want, rep.UnreadCancels, cmpopts.IgnoreFields(CancelRecord{}, "Arrived")); diff != "" || len(rep.Cancels) != 0 {
				t.Errorf("unread cancels (-want +got):\n%s\nread cancels: %+v", diff, rep.Cancels)
			}
			if rep.StdinUnread != int64(len(cancel)) {
				t.Errorf("StdinUnread = %d, want the cancel's %d bytes", rep.StdinUnread, len(cancel))
			}
		})
	}
}
