package cmdtest_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// childEnv makes the test binary, run by the tests as their command, echo
// its stdin's lines with "> " before each, say "bye" on stderr at the end,
// and exit with the status it holds.
const childEnv = "CMDTEST_TEST_CHILD"

func TestMain(m *testing.M) {
	if code := os.Getenv(childEnv); code != "" {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Printf("> %s\n", in.Text())
		}
		fmt.Fprintln(os.Stderr, "bye")
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit))
}

func self(t *testing.T) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestRun(t *testing.T) {
	got := cmdtest.Run(t, time.Minute, []string{childEnv + "=3"}, strings.NewReader("a\nb\n"), self(t))
	if want := (cmdtest.Result{Stdout: "> a\n> b\n", Stderr: "bye\n", Code: 3}); got != want {
		t.Errorf("Run = %+v, want %+v", got, want)
	}
	// No stdin: the null device, read to its end at once.
	if got := cmdtest.Run(t, time.Minute, []string{childEnv + "=0"}, nil, self(t)); got.Code != 0 || got.Stdout != "" {
		t.Errorf("Run without stdin = %+v", got)
	}
}

func TestStart(t *testing.T) {
	dir := t.TempDir()
	r := cmdtest.Start(t, []string{childEnv + "=5"}, func(c *exec.Cmd) { c.Dir = dir }, self(t))
	if got := r.Call(t, "ping"); got != "> ping\n" {
		t.Errorf("Call = %q", got)
	}
	r.Stdin.Close()
	if code := r.Wait(t); code != 5 || r.Stderr.String() != "bye\n" || r.Cmd.Dir != dir {
		t.Errorf("Wait = %d, stderr %q, dir %q; want 5, bye, %s", code, r.Stderr, r.Cmd.Dir, dir)
	}
}

func TestBound(t *testing.T) {
	if d := cmdtest.Bound(t); d <= 0 || d > 2*time.Minute {
		t.Errorf("Bound = %v, want at most 2m", d)
	}
	if d := cmdtest.Bound(&testing.B{}); d != 2*time.Minute {
		t.Errorf("Bound without a deadline = %v, want 2m", d)
	}
}
