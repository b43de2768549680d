package main

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// writeStatusFile writes a status file named name in dir for the proxy
// pid (with its start time), started at start and updated at updated.
func writeStatusFile(t *testing.T, dir, name string, pid int, procStart uint64, start, updated time.Time, edit func(*state.Status)) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	st := state.Status{ProcStart: procStart}
	st.ProxyPID, st.ServerPID, st.Argv, st.Start, st.Updated, st.Running = pid, pid, []string{name}, start, updated, true
	if edit != nil {
		edit(&st)
	}
	path := filepath.Join(dir, name+state.StatusSuffix)
	if err := state.WriteStatus(path, st); err != nil {
		t.Fatal(err)
	}
	return path
}

// goneProcess returns the pid of a process that has ended and been
// reaped.
func goneProcess(t *testing.T) int {
	t.Helper()
	c := exec.Command(binary, "-h")
	c.Run()
	return c.Process.Pid
}

// TestStatusStaleCounted: a proxy that was killed a moment ago is stale at
// once (its process is gone), and when only stale files are there, status
// says so and points to -all, which shows it as gone.
func TestStatusStaleCounted(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no process check on Windows")
	}
	dir := t.TempDir()
	now := time.Now()
	writeStatusFile(t, dir, "killed-server", goneProcess(t), 0, now.Add(-time.Minute), now, nil)
	r := mcpstdio(t, time.Minute, "status", "-dir", dir)
	if !strings.Contains(r.stdout, "no running mcpstdio proxy") || !strings.Contains(r.stdout, "1 stale status file") || !strings.Contains(r.stdout, "-all") || strings.Contains(r.stdout, "no status file in") {
		t.Errorf("status with only a stale file:\n%s\nwant no running proxy, 1 stale status file, and -all named", r.stdout)
	}
	r = mcpstdio(t, time.Minute, "status", "-all", "-dir", dir)
	if !strings.Contains(r.stdout, "killed-server") || !strings.Contains(r.stdout, "STALE: the proxy is gone") {
		t.Errorf("status -all:\n%s\nwant the killed proxy, stale and gone", r.stdout)
	}
}

// TestStatusInvalidAges: times in a status file that no proxy writes (a
// start after the update, ages past any clock) are shown as invalid,
// never as a negative or wrapped duration.
func TestStatusInvalidAges(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	writeStatusFile(t, dir, "crafted", os.Getpid(), state.SelfStart(), time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC), now, func(st *state.Status) {
		st.Pending = []proxy.PendingStatus{{Dir: "in", ID: []byte("1"), Method: "tools/call", AgeUS: math.MaxInt64, State: "waiting"}}
		st.Streams = []proxy.StreamStatus{{Dir: "out", BlockedUS: math.MaxInt64, BlockedBytes: 1}}
	})
	r := mcpstdio(t, time.Minute, "status", "-dir", dir)
	if strings.Contains(r.stdout, "-2562047h") || strings.Contains(r.stdout, "2562047h") || strings.Count(r.stdout, "invalid") < 3 {
		t.Errorf("status of a crafted file:\n%s\nwant the start, the pending age and the blocked time invalid", r.stdout)
	}
}

// TestStatusReadsBothDirs: a host that does not pass $MCPSTDIO_STATE_DIR
// to its servers (Codex) has its proxies keep their status files in the
// per-user directory; status run with the variable set finds them there
// as well as in the variable's directory.
func TestStatusReadsBothDirs(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the per-user directory is set here through XDG_STATE_HOME (Linux)")
	}
	xdg, env := t.TempDir(), t.TempDir()
	now := time.Now()
	writeStatusFile(t, filepath.Join(xdg, "mcpstdio"), "in-user-dir", os.Getpid(), state.SelfStart(), now, now, nil)
	writeStatusFile(t, env, "in-env-dir", os.Getpid(), state.SelfStart(), now, now, nil)
	r := resultOf(cmdtest.Run(t, time.Minute, []string{"XDG_STATE_HOME=" + xdg, state.EnvStateDir + "=" + env}, nil, binary, "status"))
	if !strings.Contains(r.stdout, "in-user-dir") || !strings.Contains(r.stdout, "in-env-dir") {
		t.Errorf("status with %s set:\n%s\nwant the proxies of both directories", state.EnvStateDir, r.stdout)
	}
}

// TestStateIsolated: the tests of this package, and the commands they
// run, keep their state in a directory of their own, never the user's.
func TestStateIsolated(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("the per-user directory derives from HOME on macOS, which the tests leave alone")
	}
	root := filepath.Dir(os.Getenv(state.EnvStateDir))
	if !strings.Contains(root, "mcpstdio-test-state-") {
		t.Fatalf("%s = %q: not the tests' own", state.EnvStateDir, os.Getenv(state.EnvStateDir))
	}
	for _, d := range state.SearchDirs() {
		if !strings.HasPrefix(d, root+string(filepath.Separator)) {
			t.Errorf("status would look in %s, outside the tests' own state %s", d, root)
		}
	}
}

// TestStatusSaysHowOld: a running proxy's status file written a second
// ago is shown with its age, so that "a write in progress for 43ms" is not
// taken for what is true now.
func TestStatusSaysHowOld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	writeStatusFile(t, dir, "one-second-old", os.Getpid(), state.SelfStart(), now.Add(-time.Minute), now.Add(-time.Second), nil)
	r := mcpstdio(t, time.Minute, "status", "-dir", dir)
	if !regexp.MustCompile(`running, as of 1\.\d+s ago`).MatchString(r.stdout) {
		t.Errorf("status of a file written a second ago:\n%s\nwant \"running, as of 1.…s ago\"", r.stdout)
	}
}
