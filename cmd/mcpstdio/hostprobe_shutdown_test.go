package main

import (
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestHostProbeShutdownLadder: shutdown-ladder against minihost, a real
// host command, ending its server three ways: by the specification's
// ladder (pass), SIGTERM before stdin's close (warn), closing stdin and
// exiting (fail, the orphan's pid named and ended), and closing stdin and
// waiting for ever (fail at the harness's bound, named).
func TestHostProbeShutdownLadder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shutdown-ladder reads /proc: Linux only")
	}
	t.Parallel()
	host := buildMinihost(t)
	for _, c := range []struct {
		mode string
		want assertions.Verdict
		says []string
	}{
		{"spec", assertions.Pass, []string{"stdin closed at +0s, SIGTERM (ignored) at +", "killed by a signal it cannot catch (SIGKILL)", "no server process left"}},
		{"signal-first", assertions.Warn, []string{"signal first: SIGTERM (ignored) at +0s"}},
		{"orphan", assertions.Fail, []string{"orphaned: the host ended (exit status 0", "and left pid ", "stdin closed at +0s", "the criterion killed it"}},
		{"wait", assertions.Fail, []string{"the host was still running, ending a server that ignores stdin's end and SIGTERM, 4s after it started (the harness's bound", "stdin closed at +0s"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^shutdown-ladder$", "-host-cap", "2s", "-within", "2s", "--", host, "-shutdown", c.mode, "-grace", "1s", "{server}")
			if v := verdicts(res.stdout)["shutdown-ladder"]; v != c.want {
				t.Errorf("shutdown-ladder %q, want %s\nstdout:\n%s\nstderr:\n%s", v, c.want, res.stdout, res.stderr)
			}
			t.Logf("%s", res.stdout)
			for _, s := range c.says {
				if !strings.Contains(res.stdout, s) {
					t.Errorf("the evidence does not say %q:\n%s", s, res.stdout)
				}
			}
		})
	}
}

// TestHostProbeSetsidDaemon: a host that exits 0 but leaves
// a process of its own session holding its output is judged by its exit:
// the criterion passes, its evidence names the process, and the process is
// ended. Before, every criterion failed with "WaitDelay expired before I/O
// complete".
func TestHostProbeSetsidDaemon(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the processes holding a pipe are read from /proc: Linux only")
	}
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^(junk-on-stdout|crash-mid-call)$", "--", host, "-daemon", "{server}")
	want := map[string]assertions.Verdict{"junk-on-stdout": assertions.Pass, "crash-mid-call": assertions.Pass}
	if diff := cmp.Diff(want, verdicts(res.stdout)); diff != "" || strings.Contains(res.stdout, "WaitDelay") {
		t.Errorf("hostprobe against a host leaving a daemon: verdicts (-want +got):\n%s\nstdout:\n%s\nstderr:\n%s", diff, res.stdout, res.stderr)
	}
	pids := regexp.MustCompile(`the host left pid (\d+) \(sleep 1000\) holding its output after it exited`).FindAllStringSubmatch(res.stdout, -1)
	if len(pids) != 2 {
		t.Fatalf("want each criterion to name the sleep daemon holding the host's output:\n%s", res.stdout)
	}
	for _, m := range pids {
		if b, err := os.ReadFile("/proc/" + m[1] + "/cmdline"); err == nil && strings.Contains(string(b), "sleep") {
			t.Errorf("the daemon pid %s still runs after hostprobe", m[1])
		}
	}
}

// TestHostProbeHandshakeTimeout: handshake-timeout against minihost, which
// gives up on initialize after -handshake-timeout, cancels it and exits 1
// (pass), and without it waits for ever (fail at the cap, named). The host
// that waits for ever is held for the cap and a start allowance of 3s
// (-within) rather than the default 10s: it fails whatever the bound, and
// its start (minihost and the fake) takes well under a second.
func TestHostProbeHandshakeTimeout(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	for _, c := range []struct {
		name   string
		within []string
		flags  []string
		want   assertions.Verdict
		says   []string
	}{
		{"bounded", nil, []string{"-handshake-timeout", "1s"}, assertions.Pass, []string{"the fake never answered initialize (id 1): the host ended ", "exit status 1", "sent notifications/cancelled for initialize after "}},
		{"forever", []string{"-within", "3s"}, nil, assertions.Fail, []string{"the host was still waiting ", "the harness's bound: 6s, HostConfig.Cap and Within for its start"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"hostprobe", "-run", "^handshake-timeout$", "-host-cap", "3s"}, c.within...)
			args = append(append(append(args, "--", host), c.flags...), "{server}")
			res := mcpstdio(t, 2*time.Minute, args...)
			t.Logf("%s", res.stdout)
			if v := verdicts(res.stdout)["handshake-timeout"]; v != c.want {
				t.Errorf("handshake-timeout %q, want %s\nstdout:\n%s\nstderr:\n%s", v, c.want, res.stdout, res.stderr)
			}
			for _, s := range c.says {
				if !strings.Contains(res.stdout, s) {
					t.Errorf("the evidence does not say %q:\n%s", s, res.stdout)
				}
			}
		})
	}
}

// TestProbeSetsidEscape: a server that starts a process in a
// session of its own leaves it outside its process group; probe kills it
// after each criterion and says so in that criterion's evidence. Before,
// one sleep per criterion ran on, unmentioned.
func TestProbeSetsidEscape(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("escaped processes are found in /proc: Linux only")
	}
	t.Parallel()
	// The server becomes the fake once the sleep has its own session (until
	// then the sleep is in the server's group, which is killed anyway).
	server := `f="$1/ready.$$"; setsid sh -c 'echo > "$0"; exec sleep 1000 </dev/null >/dev/null 2>&1' "$f" & until [ -s "$f" ]; do sleep 0.01; done; exec "$0" fake`
	res := mcpstdio(t, 2*time.Minute, "probe", "-run", "^(stdout-clean|era)$", "--", "sh", "-c", server, binary, t.TempDir())
	pids := regexp.MustCompile(`the server left pid (\d+) \(sleep 1000\) running outside its process group \(setsid\): killed`).FindAllStringSubmatch(res.stdout, -1)
	if len(pids) != 2 {
		t.Fatalf("want each of the two criteria to name the escaped sleep it killed:\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	}
	for _, m := range pids {
		if b, err := os.ReadFile("/proc/" + m[1] + "/cmdline"); err == nil && strings.Contains(string(b), "sleep") {
			t.Errorf("the escaped sleep, pid %s, still runs after probe", m[1])
		}
	}
}
