//go:build linux

package integration_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

// TestAgentsConnectOnlyRaw checks the facts docs/hosts.md states of Gemini
// CLI and Qwen Code, on which their hostprobe verdicts rest, with a raw
// harness of its own: `NAME mcp list` against `mcpstdio fake`, read from
// the fake's report (requests, cancels, signals, stdin's end, its pid) and
// /proc. They run when installed (`npm ci` in agents/gemini, `npm install`
// in agents/qwen and agents/qwen-node20); CI does not install them.

// rawAgent is a connect-only CLI and what was measured of it by hand.
type rawAgent struct {
	name, bin, config string // bin in agents/NAME/node_modules; config under HOME
	env               []string
	signalFirst       bool          // it signals before closing stdin
	orphans           bool          // a server ignoring stdin's end and SIGTERM outlives it
	handshake         time.Duration // how long it waits on an unanswered initialize (±50%)
	cancels           bool          // it cancels the initialize it gives up on
}

var rawAgents = []rawAgent{
	{name: "gemini", bin: ".bin/gemini", config: ".gemini/settings.json", env: []string{"GEMINI_CLI_TRUST_WORKSPACE=true"},
		signalFirst: true, orphans: true, handshake: 5 * time.Second, cancels: true},
	{name: "qwen", bin: ".bin/qwen", config: ".qwen/settings.json", handshake: 10 * time.Second},
	{name: "qwen-node20", bin: ".bin/qwen", config: ".qwen/settings.json", handshake: 5 * time.Second, cancels: true},
}

func TestAgentsConnectOnlyRaw(t *testing.T) {
	mcpstdio, _ := buildHostBinaries(t)
	for _, a := range rawAgents {
		t.Run(a.name, func(t *testing.T) {
			modules, err := filepath.Abs(filepath.Join("agents", a.name, "node_modules"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(modules, a.bin)); err != nil {
				t.Skipf("%s needs its packages installed in integration/agents/%s: %v", a.name, a.name, err)
			}
			t.Parallel()
			t.Run("shutdown", func(t *testing.T) {
				t.Parallel()
				rep, pid, out, _ := runRaw(t, mcpstdio, a, modules, "-ignore-eof", "-ignore-sigterm")
				if len(rep.Requests) == 0 || rep.Requests[0].Method != "initialize" {
					t.Fatalf("%s: the fake saw no initialize; its output:\n%s", a.name, out)
				}
				firstSignal := len(rep.Signals) > 0 && (!rep.EOF || rep.Signals[0].At.Before(rep.EOFAt))
				if firstSignal != a.signalFirst {
					t.Errorf("%s: signalled before closing stdin: %v, measured by hand %v (signals %+v, stdin ended %v at %v)", a.name, firstSignal, a.signalFirst, rep.Signals, rep.EOF, rep.EOFAt)
				}
				if pid == 0 {
					t.Fatalf("%s: the fake's report has no pid", a.name)
				}
				alive := syscall.Kill(pid, 0) == nil && !zombie(pid)
				if alive {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
				if alive != a.orphans {
					t.Errorf("%s: the server ignoring stdin's end and SIGTERM outlived it: %v, measured by hand %v (signals %+v)", a.name, alive, a.orphans, rep.Signals)
				}
			})
			t.Run("handshake", func(t *testing.T) {
				t.Parallel()
				rep, _, out, ended := runRaw(t, mcpstdio, a, modules, "-no-handshake")
				if len(rep.Requests) == 0 || rep.Requests[0].Method != "initialize" {
					t.Fatalf("%s: the fake saw no initialize; its output:\n%s", a.name, out)
				}
				waited := ended.Sub(rep.Requests[0].Arrived)
				if waited < a.handshake/2 || waited > a.handshake*3/2 {
					t.Errorf("%s: gave up on initialize after %v, measured by hand %v", a.name, waited, a.handshake)
				}
				if cancelled := len(rep.Cancels) > 0; cancelled != a.cancels {
					t.Errorf("%s: cancelled the initialize: %v (%+v), measured by hand: %v", a.name, cancelled, rep.Cancels, a.cancels)
				}
			})
		})
	}
}

// runRaw runs `NAME mcp list` with the fake (and flags) as its server
// "fake", in a process group of its own with a HOME of its own, and returns
// the fake's report once the CLI has exited and the fake has ended or been
// signalled, the fake's pid, the CLI's output and when it exited. The CLI's
// exit status must be 0 (it reports a failed server only in its output).
func runRaw(t *testing.T, mcpstdio string, a rawAgent, modules string, flags ...string) (fakeserver.Report, int, string, time.Time) {
	t.Helper()
	home := t.TempDir()
	report := filepath.Join(home, "fake.json")
	server := append([]string{"fake", "-report", report}, flags...)
	tmpl, err := os.ReadFile(filepath.Join("agents", a.name, "settings.json.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cfg := strings.NewReplacer("{server_command_json}", js(mcpstdio), "{server_args_json}", js(server)).Replace(string(tmpl))
	if err := os.MkdirAll(filepath.Dir(filepath.Join(home, a.config)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, a.config), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(modules, a.bin), "mcp", "list")
	cmd.Dir = home
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home+"/.config", "XDG_CACHE_HOME="+home+"/.cache",
		"XDG_DATA_HOME="+home+"/.local/share", "XDG_STATE_HOME="+home+"/.local/state", "TMPDIR="+home,
		// Qwen Code's newest release runs on the Node 22 its package pins.
		"PATH="+filepath.Join(modules, ".bin")+":"+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, a.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	ended := time.Now()
	// What is left of its process group is killed at the end, after the
	// test has looked for an orphan (the server is in that group).
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	if err != nil {
		t.Errorf("%s mcp list: %v (measured by hand: exit status 0)\n%s", a.name, err, out.String())
	}
	// The fake rewrites its report after each change: wait for the end
	// (exit, or a signal it ignored) to be in it.
	var rep fakeserver.Report
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		rep, _ = fakeserver.ReadReportFile(report)
		if rep.Exit != "" || len(rep.Signals) > 0 && rep.EOF {
			break
		}
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		}
		break
	}
	t.Cleanup(func() {
		if left := leftovers(home, 10*time.Second); len(left) > 0 {
			t.Logf("%s: killed what was left of the run: %s", a.name, strings.Join(left, "; "))
		}
	})
	return rep, rep.PID, out.String(), ended
}

// zombie reports whether pid has ended and waits for its parent.
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	_, after, _ := bytes.Cut(stat, []byte(") "))
	return bytes.HasPrefix(after, []byte("Z"))
}
