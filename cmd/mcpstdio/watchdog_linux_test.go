//go:build linux

package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// TestProbeKilledTakesWrapped: a probe killed with SIGKILL takes with it
// everything it started, through its watchdog: the server it ran directly,
// a server a shell ran that ignores SIGTERM (the shell, in the server's
// group, dies of its parent-death signal; the server, its child, used to
// be adopted by init and run on), and one that left the group and the
// session (setsid). The setsid'd server here keeps the probe's environment,
// so the watchdog finds it whenever it started; one that also cleared its
// environment is found only if it was already running at the probe's last
// look (a few times a second), which this test cannot arrange to miss.
func TestProbeKilledTakesWrapped(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, shell string }{
		{"direct", ""},
		{"sh-ignoring-term", "trap '' TERM INT HUP; %s; echo x"},
		{"setsid", "setsid %s; echo x"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			server := []string{binary, "fake", "-ignore-eof", "-ignore-sigterm", "-report", filepath.Join(dir, "fake-"+fakeserver.ReportPID+".json")}
			if tt.shell != "" {
				server = []string{"sh", "-c", fmt.Sprintf(tt.shell, shellWords(server))}
			}
			tag := tagEnv(t)
			probe := exec.Command(binary, append([]string{"probe", "-run", "^shutdown-stdin-eof$", "-shutdown-grace", "10m", "--"}, server...)...)
			probe.Env = append(os.Environ(), tag)
			var started tagged
			fake := killedWhileWaiting(t, probe, filepath.Join(dir, "fake-*.json"), started.look(tag))
			allGone(t, "probe", tag, started, fake)
		})
	}
}

// TestHostProbeKilledTakesWrappedHost: a hostprobe killed with SIGKILL
// takes with it a host a shell ran that ignores SIGTERM, and the fake
// server that host started: the shell dies of its parent-death signal, and
// the host and the fake, which used to be adopted by init (a subreaper
// that is killed cannot act) and run on, die by its watchdog.
func TestHostProbeKilledTakesWrappedHost(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	tmp := t.TempDir()
	tag := tagEnv(t)
	hp := exec.Command(binary, "hostprobe", "-run", "^shutdown-ladder$", "-host-cap", "10m", "--",
		"sh", "-c", "trap '' TERM INT HUP; "+shellWords([]string{host})+` -shutdown wait "$@"; echo x`, "sh", "{server}")
	hp.Env = append(os.Environ(), "TMPDIR="+tmp, tag)
	var started tagged
	fake := killedWhileWaiting(t, hp, filepath.Join(tmp, "mcpstdio-host-*", "shutdown-ladder-*.json"), started.look(tag))
	allGone(t, "hostprobe", tag, started, fake)
}

// TestProbeLeavesNoWatchdog: a probe that ends normally leaves no watchdog
// running, and had one while it ran.
func TestProbeLeavesNoWatchdog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tag := tagEnv(t)
	// The fake ignores stdin's end: the probe waits a second for it, then
	// ends it with SIGTERM, and ends.
	probe := exec.Command(binary, "probe", "-run", "^shutdown-stdin-eof$", "-shutdown-grace", "1s", "--",
		binary, "fake", "-ignore-eof", "-report", filepath.Join(dir, "fake-"+fakeserver.ReportPID+".json"))
	probe.Env = append(os.Environ(), tag)
	if err := probe.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = probe.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = probe.Process.Kill()
		<-waited
		killTagged(tag)
	})
	var dog proc.ID
	poll.Wait(t, time.Minute, "the probe's watchdog while the server runs", func() bool {
		if files, _ := filepath.Glob(filepath.Join(dir, "fake-*.json")); len(files) == 0 {
			return false
		}
		for _, id := range proc.Find(nil, tag) {
			if strings.HasPrefix(proc.CommandLine(id.PID), "mcpstdio-watchdog") {
				dog = id
				return true
			}
		}
		return false
	}, func() string { return "tagged: " + describe(proc.Find(nil, tag)) })
	poll.Wait(t, time.Minute, "the probe's end", func() bool {
		select {
		case <-waited:
			return true
		default:
			return false
		}
	}, nil)
	if dog.Running() {
		t.Errorf("the probe ended and its watchdog (pid %d) runs on", dog.PID)
	}
	if left := proc.Find(nil, tag); len(left) > 0 {
		t.Errorf("the probe ended normally and left %s", describe(left))
	}
}

// allGone waits (bounded) until every process that carries tag, those in
// started and fake have ended, and fails naming those that run on.
func allGone(t *testing.T, cmd, tag string, s tagged, fake int) {
	t.Helper()
	t.Cleanup(func() { killTagged(tag) })
	started := s.ids
	if len(started) < 2 {
		t.Fatalf("%s ran %s before it was killed: want itself and its server at least", cmd, s.desc)
	}
	left := func() []proc.ID {
		var out []proc.ID
		seen := map[int]bool{}
		for _, id := range append(append([]proc.ID(nil), started...), proc.Find(nil, tag)...) {
			if !seen[id.PID] && id.Running() {
				seen[id.PID] = true
				out = append(out, id)
			}
		}
		if fake > 0 && !seen[fake] && alive(fake) {
			out = append(out, proc.ID{PID: fake})
		}
		return out
	}
	poll.Wait(t, time.Minute, fmt.Sprintf("everything the killed %s started (%s) gone", cmd, s.desc),
		func() bool { return len(left()) == 0 },
		func() string { return "running on: " + describe(left()) })
}

// tagged is what carried a test's tag at one look, and its description.
type tagged struct {
	ids  []proc.ID
	desc string
}

// look returns a function that takes the look.
func (s *tagged) look(tag string) func() {
	return func() {
		s.ids = proc.Find(nil, tag)
		s.desc = describe(s.ids)
	}
}

// tagEnv returns a variable (KEY=value) no other test's processes carry.
func tagEnv(t *testing.T) string {
	return fmt.Sprintf("MCPSTDIO_TEST_TAG=%s-%s", strings.NewReplacer("/", "-").Replace(t.Name()), rand.Text())
}

// killTagged kills the processes that carry tag (the test's own).
func killTagged(tag string) {
	for _, id := range proc.Find(nil, tag) {
		_ = syscall.Kill(id.PID, syscall.SIGKILL)
	}
}

// describe names processes as "pid N (command line)".
func describe(ids []proc.ID) string {
	var s []string
	for _, id := range ids {
		s = append(s, fmt.Sprintf("pid %d (%s)", id.PID, proc.CommandLine(id.PID)))
	}
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// shellWords quotes argv for sh.
func shellWords(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
