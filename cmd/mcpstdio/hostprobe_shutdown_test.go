package main

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// TestHostProbeShutdownLadder: shutdown-ladder against minihost, a real
// host command, ending its server four ways: by the specification's ladder
// (pass), SIGTERM before stdin's close (warn), closing stdin and exiting
// (fail, the orphan named and ended), and closing stdin and waiting for
// ever (fail at the harness's bound). It asserts the rule, not the clock:
// the order of the steps the fake saw, what was left running and who ended
// it, and the bound by the value passed. The cap counts from the first step
// the fake saw, so the minihost's start on a loaded machine does not count;
// the cap is ten times the ladder (two graces) so that the host's own
// timers, late on a loaded machine, are not taken for a host past it.
func TestHostProbeShutdownLadder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("shutdown-ladder reads /proc: Linux only")
	}
	t.Parallel()
	host := buildMinihost(t)
	const grace, hostCap = 250 * time.Millisecond, 5 * time.Second
	var subtests []testkit.Subtest
	for _, c := range []struct {
		mode  string
		want  assertions.Verdict
		steps []string // what the fake saw, in order
		says  []string
	}{
		{"spec", assertions.Pass, []string{"stdin closed", "SIGTERM (ignored)"}, []string{"then it was killed by a signal it cannot catch (SIGKILL)", "no server process left after the host ended (exit status 0"}},
		{"signal-first", assertions.Warn, []string{"SIGTERM (ignored)"}, []string{"signal first: ", "then it was killed by a signal it cannot catch (SIGKILL)"}},
		{"orphan", assertions.Fail, []string{"stdin closed"}, []string{"orphaned: the host ended (exit status 0", "the criterion killed it"}},
		{"wait", assertions.Fail, []string{"stdin closed"}, []string{fmt.Sprintf("the harness's bound: %v after the first step, HostConfig.Cap, -host-cap", hostCap), "the criterion killed the host with its process group"}},
	} {
		subtests = append(subtests, testkit.Subtest{Name: c.mode, F: func(t *testing.T) {
			res := mcpstdio(t, 2*time.Minute, "hostprobe", "-json", "-run", "^shutdown-ladder$", "-host-cap", hostCap.String(),
				"--", host, "-shutdown", c.mode, "-grace", grace.String(), "{server}")
			var rep assertions.Report
			if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil || len(rep.Results) != 1 {
				t.Fatalf("hostprobe -json: %v\nstdout:\n%s\nstderr:\n%s", err, res.stdout, res.stderr)
			}
			got := rep.Results[0]
			t.Logf("%s: %s", got.Verdict, got.Evidence)
			if got.Verdict != c.want {
				t.Errorf("shutdown-ladder %q, want %s: %s", got.Verdict, c.want, got.Evidence)
			}
			if diff := cmp.Diff(c.steps, ladderSteps(got.Evidence)); diff != "" {
				t.Errorf("the steps the fake saw, in order (-want +got):\n%s\n%s", diff, got.Evidence)
			}
			for _, s := range c.says {
				if !strings.Contains(got.Evidence, s) {
					t.Errorf("the evidence does not say %q:\n%s", s, got.Evidence)
				}
			}
			left := regexp.MustCompile(`left pid (\d+) \(`).FindStringSubmatch(got.Evidence)
			if (left != nil) != (c.mode == "orphan") {
				t.Errorf("a process named as left running: %v, want %v:\n%s", left != nil, c.mode == "orphan", got.Evidence)
			}
			if left != nil {
				if b, err := os.ReadFile("/proc/" + left[1] + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
					t.Errorf("the orphan, pid %s, still runs after hostprobe: %s", left[1], b)
				}
			}
		}})
	}
	testkit.AtOnce(t, subtests...) // they wait (the grace, the host's cap): not queued behind the package's other tests
}

// ladderSteps returns the names of the ladder's steps in a shutdown-ladder
// evidence, in the order given ("stdin closed", "SIGTERM (ignored)", ...).
func ladderSteps(evidence string) []string {
	var steps []string
	for _, m := range regexp.MustCompile(`(stdin closed|SIG[A-Z]+(?: \(ignored\))?) at \+`).FindAllStringSubmatch(evidence, -1) {
		steps = append(steps, m[1])
	}
	return steps
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
	var subtests []testkit.Subtest
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
		subtests = append(subtests, testkit.Subtest{Name: c.name, F: func(t *testing.T) {
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
		}})
	}
	testkit.AtOnce(t, subtests...) // they wait (the host's timeout, the bound): not queued behind the package's other tests
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
