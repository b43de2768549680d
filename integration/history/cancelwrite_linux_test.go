package history_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cancelWrite is the go-sdk client pair's flip, checked with a raw server
// rather than hostprobe's fake, which reads ahead and so leaves the pipe
// filled by a few bytes more or less from run to run: deafserver reads its
// stdin one byte at a time up to the initialize request and never again.
// The call's 65300 bytes of padding leave its line (65440 bytes) and the
// initialized notification 42 bytes short of the 64 KiB pipe: the call is
// written, and the cancel, when the 1 s timeout ends the call, is not.
type cancelWrite struct {
	version string
	env     []string
	args    []string // more flags of gosdkclient
	hangs   bool     // the host is still running at the end of the watch
	// closeHangs: the call returned (its error printed) and Close is
	// what is still running.
	closeHangs bool
}

var cancelWrites = []cancelWrite{
	{version: "v1.7.0", hangs: true},
	{version: "v1.8.0", hangs: false},
	// the same release with the old behaviour asked back
	{version: "v1.8.0", env: []string{"MCPGODEBUG=blockingcancelnotify=1"}, hangs: true},
	// Close 200 ms after the call: the cancel's goroutine has begun its
	// write, and Close waits for it
	{version: "v1.8.0", args: []string{"-close-after", "200ms"}, hangs: true, closeHangs: true},
}

// TestGoSDKCancelWrite runs the go-sdk clients against deafserver and checks
// that v1.7.0 (and v1.8.0 with MCPGODEBUG=blockingcancelnotify=1) is still
// blocked writing notifications/cancelled 15 s after its call's 1 s
// timeout, with the server's stdin pipe full, while v1.8.0 returns from the
// call and exits (its Close gives the server 5 s, then SIGTERM) — unless it
// closes 200 ms after the call: then the call returns, and Close waits for
// the cancel's write, still there at the end of the watch.
func TestGoSDKCancelWrite(t *testing.T) {
	t.Parallel()
	binDir := t.TempDir()
	// Side by side: subtests started from goroutines (see TestHistory).
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, c := range cancelWrites {
		wg.Go(func() {
			t.Run(strings.Join(slices.Concat([]string{c.version}, c.env, c.args), " "), func(t *testing.T) {
				client := goProgram(t, binDir, "go-sdk", c.version, "client")
				args := slices.Concat([]string{"-timeout", "1s", "-args-bytes", "65300"}, c.args, []string{"--", filepath.Join(filepath.Dir(client), "deafserver")})
				cmd := exec.Command(client, args...)
				cmd.Env = append(os.Environ(), c.env...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case err := <-exited:
					if c.hangs {
						t.Errorf("go-sdk %s %v: the client exited (%v) though its cancel write should block: %s", c.version, c.env, err, out.String())
					} else {
						t.Logf("go-sdk %s: exited (%v): %s", c.version, err, strings.TrimSpace(out.String()))
					}
				case <-time.After(16 * time.Second):
					// The watch is over: 15 s past the call's timeout.
					pipe := serverStdin(cmd.Process.Pid)
					if !c.hangs {
						// Where it is stuck: a Go program prints its
						// goroutines on SIGQUIT and exits.
						_ = syscall.Kill(cmd.Process.Pid, syscall.SIGQUIT)
						select {
						case <-exited:
							exited <- nil
						case <-time.After(5 * time.Second):
						}
					}
					_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
					<-exited
					// The fix is the call returning at its timeout; a
					// loaded machine can still be in Close's shutdown
					// ladder (5 s, SIGTERM, 5 s) at the watch's end.
					returned := strings.Contains(out.String(), "tools/call: error after")
					switch {
					case !c.hangs && !returned:
						t.Errorf("go-sdk %s %v: the client was still running 15 s after its call's 1 s timeout (server stdin pipe: %s); its output: %s", c.version, c.env, pipe, out.String())
					case c.closeHangs && (!returned || strings.Contains(out.String(), "Close returned")):
						t.Errorf("go-sdk %s %v: want the call returned and Close still running; the server's stdin pipe: %s; its output: %s", c.version, c.args, pipe, out.String())
					default:
						t.Logf("go-sdk %s %v %v: still running 15 s after its call's 1 s timeout (the call returned: %v); the server's stdin pipe: %s", c.version, c.env, c.args, returned, pipe)
					}
				}
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			})
		})
	}
}

// serverStdin says how many bytes wait in the stdin pipe of the server, the
// first child of the client pid (FIONREAD, as TIOCINQ).
func serverStdin(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	kids := strings.Fields(string(b))
	if err != nil || len(kids) == 0 {
		return fmt.Sprintf("no server seen (%v)", err)
	}
	fd, err := unix.Open("/proc/"+kids[0]+"/fd/0", unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return err.Error()
	}
	defer unix.Close(fd)
	n, err := unix.IoctlGetInt(fd, unix.TIOCINQ) // FIONREAD
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d of 65536 bytes", n)
}
