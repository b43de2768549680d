//go:build linux

package mcptest_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/poll"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// TestCloseKillsEscaped: a server that starts a process in a
// session of its own (setsid) leaves it outside its process group; Close
// finds it by the environment it inherited, kills it and says so in Exit.
// Before, it ran on after every session.
func TestCloseKillsEscaped(t *testing.T) {
	s := mcptest.StartServer(t, mcptest.Command("sh", "-c",
		`setsid sh -c 'echo escaped >&2; exec sleep 1000 </dev/null >/dev/null 2>&1' & exec cat >/dev/null`), mcptest.WithoutHandshake())
	// The line on stderr comes once the process has its own session.
	if err := poll.Until(t.Context(), "the escape's line on stderr", func() bool { return s.Stats().StderrBytes > 0 }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ex := s.Stats().Exit
	if len(ex.Escaped) != 1 || !strings.Contains(ex.Escaped[0], "(sleep 1000)") {
		t.Fatalf("Exit.Escaped = %q, want the setsid sleep; exit: %s", ex.Escaped, ex)
	}
	if !strings.Contains(ex.String(), "killed what had escaped its process group: pid ") {
		t.Errorf("Exit.String() = %q, want it to name the escaped process", ex)
	}
	pid := regexp.MustCompile(`^pid (\d+) `).FindStringSubmatch(ex.Escaped[0])[1]
	if b, err := os.ReadFile("/proc/" + pid + "/stat"); err == nil && !strings.Contains(string(b), ") Z ") {
		t.Errorf("the escaped sleep, pid %s, still runs: %s", pid, b)
	}
}
