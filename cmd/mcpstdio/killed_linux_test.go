//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// TestProbeKilledTakesServer: a probe killed with SIGKILL (a CI job's
// timeout, the OOM killer) takes the server it started with it, even one
// that ignores stdin's end and SIGTERM: its parent-death signal. Before,
// the server ran on, in a process group of its own, holding the job's
// pipes.
func TestProbeKilledTakesServer(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	probe := exec.Command(binary, "probe", "-run", "^shutdown-stdin-eof$", "-shutdown-grace", "10m", "--",
		binary, "fake", "-ignore-eof", "-ignore-sigterm", "-report", filepath.Join(dir, "fake-"+fakeserver.ReportPID+".json"))
	fake := killedWhileWaiting(t, probe, filepath.Join(dir, "fake-*.json"))
	poll.Wait(t, time.Minute, fmt.Sprintf("the server (pid %d) gone with the killed probe", fake), func() bool { return !alive(fake) }, nil)
}

// TestHostProbeKilledTakesHost: a hostprobe killed with SIGKILL takes the
// host command it started with it, even one that never exits (it closed
// its server's stdin and waits for ever for a server that ignores it):
// its parent-death signal. Before, the host ran on.
func TestHostProbeKilledTakesHost(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	tmp := t.TempDir()
	hp := exec.Command(binary, "hostprobe", "-run", "^shutdown-ladder$", "-host-cap", "10m", "--", host, "-shutdown", "wait", "{server}")
	hp.Env = append(os.Environ(), "TMPDIR="+tmp)
	var hosts []int
	killedWhileWaiting(t, hp, filepath.Join(tmp, "mcpstdio-host-*", "shutdown-ladder-*.json"), func() { hosts = children(hp.Process.Pid) })
	if len(hosts) == 0 {
		t.Fatal("hostprobe had no child running its host")
	}
	for _, h := range hosts {
		poll.Wait(t, time.Minute, fmt.Sprintf("the host (pid %d) gone with the killed hostprobe", h), func() bool { return !alive(h) }, nil)
	}
}

// killedWhileWaiting starts cmd (in a process group of its own), waits
// until a fake report matching pattern shows the fake's stdin closed (the
// criterion is waiting for the fake, which ignores it), runs before, kills
// cmd alone with SIGKILL and returns the fake's pid. Whatever is left of
// the group and the fake is killed when the test ends.
func killedWhileWaiting(t *testing.T, cmd *exec.Cmd, pattern string, before ...func()) int {
	t.Helper()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	fake := 0
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if fake > 0 {
			_ = syscall.Kill(fake, syscall.SIGKILL)
		}
		<-waited
	})
	// The report is a file the fake rewrites: no event to wait on.
	poll.Wait(t, time.Minute, "the fake's stdin closed by the criterion ("+pattern+")", func() bool {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if rep, err := fakeserver.ReadReportFile(f); err == nil && rep.EOF && rep.PID > 0 {
				fake = rep.PID
				return true
			}
		}
		return false
	}, nil)
	for _, f := range before {
		f()
	}
	_ = cmd.Process.Kill()
	<-waited
	return fake
}

// alive reports whether pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// children lists the pids whose parent is ppid.
func children(ppid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := strings.LastIndexByte(string(b), ')')
		if f := strings.Fields(string(b[i+1:])); i > 0 && len(f) > 1 && f[1] == strconv.Itoa(ppid) {
			pid, _ := strconv.Atoi(e.Name())
			out = append(out, pid)
		}
	}
	return out
}
