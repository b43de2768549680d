//go:build linux

package main

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestHostProbeDetachedDaemon: a host that leaves a fully detached daemon
// (setsid, a double fork, stdio on /dev/null, an empty environment: nothing
// marks it as the run's) has it ended by the criterion, which names it:
// hostprobe is a child subreaper, so the daemon became its child. Before,
// it ran on, named nowhere.
func TestHostProbeDetachedDaemon(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	arg := fmt.Sprintf("1000.%d", os.Getpid()) // a sleep of this test's own, to find
	daemons := func() []string {
		var pids []string
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil && string(b) == "sleep\x00"+arg+"\x00" {
				pids = append(pids, e.Name())
			}
		}
		return pids
	}
	t.Cleanup(func() {
		for _, p := range daemons() {
			if pid, err := strconv.Atoi(p); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^era-legacy$", "--", host, "-detach", arg, "{server}")
	t.Logf("%s", res.stdout)
	if v := verdicts(res.stdout)["era-legacy"]; v != assertions.Pass {
		t.Errorf("era-legacy %q, want pass\nstdout:\n%s\nstderr:\n%s", v, res.stdout, res.stderr)
	}
	// Its command line is sleep's, or that of the shell forking it if the
	// criterion found it between the fork and the exec.
	named := regexp.MustCompile(`the criterion ended pid (\d+) \([^)]*`+regexp.QuoteMeta(arg)+`\), which the host left running detached from it`).FindAllStringSubmatch(res.stdout, -1)
	if len(named) == 0 {
		t.Errorf("era-legacy's evidence does not name the detached sleep it ended:\n%s", res.stdout)
	}
	if left := daemons(); len(left) > 0 {
		t.Errorf("detached sleeps still running after hostprobe: pids %v", left)
	}
}
