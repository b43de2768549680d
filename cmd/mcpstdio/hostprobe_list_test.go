package main

import (
	"github.com/mcpstdio/mcpstdio/internal/testkit"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpstdio/mcpstdio/assertions"
)

// TestHostProbeListOnly: a host command that lists the tools and never
// calls one (an agent's "mcp list") is never sent huge-field's or
// many-blocks' payload, which only a tools/call's response carries: they
// are skipped, saying so, not passed on its exit status.
func TestHostProbeListOnly(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^(huge-field|many-blocks)$", "-huge-field", "200000", "-blocks", "200", "--", host, "-list", "{server}")
	want := map[string]assertions.Verdict{"huge-field": assertions.Skip, "many-blocks": assertions.Skip}
	if diff := cmp.Diff(want, verdicts(res.stdout)); diff != "" {
		t.Errorf("hostprobe of a host that only lists tools: verdicts (-want +got):\n%s\nstdout:\n%s\nstderr:\n%s", diff, res.stdout, res.stderr)
	}
}

// TestHostProbeOverLimitSlowReader: a host still taking an over-limit
// response when the harness's bound passes (here a shell reading the
// server's stdout 64 KiB every 200 ms: 8 MiB takes about 26 s) is slow,
// not hung: over-limit says "unverified", with the bytes written, not fail.
// (A shell's read loop, a byte a read, took the whole 8 MiB within the 2 s
// bound on a quick machine.)
func TestHostProbeOverLimitSlowReader(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the fake's report is read live on Linux hosts here; the shell host is POSIX")
	}
	// The host keeps the server's stdin open (sleep) while it reads; the
	// first run, which needs only its call, ends at -start-timeout.
	host := `{ printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"0"}}}' '{"jsonrpc":"2.0","method":"notifications/initialized"}' '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}'; sleep 60; } | "$@" | while :; do dd bs=65536 count=1 status=none >/dev/null; sleep 0.2; done`
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^over-limit$", "-max-frame", "8388608", "-within", "2s", "-start-timeout", "3s", "--", "sh", "-c", host, "sh", "{server}")
	got := verdicts(res.stdout)["over-limit"]
	if got != assertions.Warn || !strings.Contains(res.stdout, "unverified: the host was still taking") {
		t.Errorf("hostprobe over-limit of a host still reading at the bound: %s, want warn (unverified)\nstdout:\n%s\nstderr:\n%s", got, res.stdout, res.stderr)
	}
}

// TestHostProbeConnectOnly: a host that only connects (initialize, then
// ping, as `gemini mcp list`) and exits 0 whether or not it did, saying so
// only in its output, is judged with -expect-output: a run without its
// "connected" line failed, though the exit status is 0 (era-modern, whose
// server refuses its initialize, and stderr-noise, as it never reads the
// server's stderr); the criteria about a call are skipped,
// naming what it sent; a handshake it gives up on (and cancels), exiting
// 0 without its "connected" line, is a failure reported: pass, quoting its
// last line. TestHostProbeHandshakeExit0 has the same host without
// -expect-output.
func TestHostProbeConnectOnly(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, 2*time.Minute, "hostprobe", "-run", "^(junk-on-stdout|stderr-noise|era-legacy|era-modern|host-timeout|handshake-timeout)$",
		"-expect-output", "(?m)^connected$", "-stderr-noise", "1048576", "-host-cap", "20s", "--", host, "-connect", "-exit0", "-stderr-pipe", "-handshake-timeout", "1s", "-shutdown", "spec", "-grace", "100ms", "{server}")
	want := map[string]assertions.Verdict{
		"junk-on-stdout":    assertions.Pass,
		"stderr-noise":      assertions.Fail,
		"era-legacy":        assertions.Pass,
		"era-modern":        assertions.Fail,
		"host-timeout":      assertions.Skip,
		"handshake-timeout": assertions.Pass,
	}
	if diff := cmp.Diff(want, verdicts(res.stdout)); diff != "" {
		t.Errorf("hostprobe of a connect-only host: verdicts (-want +got):\n%s\nstdout:\n%s\nstderr:\n%s", diff, res.stdout, res.stderr)
	}
	for _, s := range []string{"made no tools/call (requests the fake saw: initialize, ping)", "needs a tool call: the host's first run made none (it sent initialize, ping)",
		"exited 0, but its output does not match", "sent notifications/cancelled for initialize after ", "exited 0 without the line of a session that worked (\"(?m)^connected$\"): the failure was reported, its last line ", "read 0 requests: its stderr was not drained"} {
		if !strings.Contains(res.stdout, s) {
			t.Errorf("hostprobe's output does not say %q:\n%s", s, res.stdout)
		}
	}
}

// TestHostProbeHandshakeExit0: a host that gives up on the handshake,
// cancels and exits 0 is judged by its output only when -expect-output
// says which line a session that worked prints: without it, warn (the
// failure is in its output at most); with a line it prints all the same
// (here its own error), the failure was not reported: fail.
func TestHostProbeHandshakeExit0(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	cases := []struct {
		name   string
		expect []string
		want   assertions.Verdict
		says   string
	}{
		{"no -expect-output", nil, assertions.Warn, "exited 0: the failure is in its output at most"},
		{"its line printed", []string{"-expect-output", "minihost:"}, assertions.Fail, "the host exited 0 and its output matches \"minihost:\", the line of a session that worked: the failure was not reported"},
	}
	var subtests []testkit.Subtest
	for _, c := range cases {
		subtests = append(subtests, testkit.Subtest{Name: c.name, F: func(t *testing.T) {
			args := append(append([]string{"hostprobe", "-run", "^handshake-timeout$"}, c.expect...), "-host-cap", "20s", "--", host, "-connect", "-exit0", "-handshake-timeout", "1s", "-grace", "100ms", "{server}")
			res := mcpstdio(t, 2*time.Minute, args...)
			if got := verdicts(res.stdout)["handshake-timeout"]; got != c.want || !strings.Contains(res.stdout, c.says) {
				t.Errorf("handshake-timeout = %s, want %s saying %q\nstdout:\n%s\nstderr:\n%s", got, c.want, c.says, res.stdout, res.stderr)
			}
		}})
	}
	testkit.AtOnce(t, subtests...) // they wait (the host's timeout): not queued behind the package's other tests
}
