//go:build unix

package main

import (
	"strings"
	"testing"
	"time"
)

// TestHostProbeReportUnwritten: the fake cannot write its report (a file
// size limit of 0 stands in for a full disk: every write to a file fails,
// while creating one works) although the host shakes hands and calls. The
// verdict is the harness's: not checked, naming the report and the error;
// the host is not blamed. Before, it said the host finished no handshake.
func TestHostProbeReportUnwritten(t *testing.T) {
	t.Parallel()
	host := buildMinihost(t)
	res := mcpstdio(t, time.Minute, "hostprobe", "-run", "^era-legacy$", "--",
		"sh", "-c", `ulimit -f 0 && exec "$0" "$@"`, host, "{server}")
	out := res.stdout + res.stderr
	if res.code != 1 {
		t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	for _, s := range []string{"not checked: the harness could not record what the fake saw", "the fake server could not write its report ", ".json: file too large"} {
		if !strings.Contains(out, s) {
			t.Errorf("the output does not say %q:\n%s", s, out)
		}
	}
	for _, s := range []string{"the host did not start", "no handshake"} {
		if strings.Contains(out, s) {
			t.Errorf("the host is blamed (%q):\n%s", s, out)
		}
	}
}
