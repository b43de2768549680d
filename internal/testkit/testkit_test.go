package testkit_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

// exitEnv makes the test binary, re-executed by TestExit, call
// testkit.Exit with the code it holds.
const exitEnv = "TESTKIT_TEST_EXIT"

// raceEnv makes the test binary, re-executed by TestWithoutRace, print
// whether it has the race detector and exit.
const raceEnv = "TESTKIT_TEST_RACE"

func TestMain(m *testing.M) {
	if os.Getenv(raceEnv) != "" {
		fmt.Print(testkit.RaceDetector)
		os.Exit(0)
	}
	if code := os.Getenv(exitEnv); code != "" {
		n, _ := strconv.Atoi(code)
		testkit.Exit(n)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit))
}

// TestExit: the test binary ends with the code Exit is given, 0 or not
// (with or without the race detector, whose exit sleep Exit skips on 0).
func TestExit(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{0, 3} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), exitEnv+"="+strconv.Itoa(code))
		out, err := cmd.CombinedOutput()
		got := 0
		if ee, ok := err.(*exec.ExitError); ok {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != code || len(out) > 0 {
			t.Errorf("Exit(%d): the binary exited %d, output %q; want %d and nothing", code, got, out, code)
		}
	}
}

func TestEachWay(t *testing.T) {
	var got []string
	testkit.EachWay(t, func(t *testing.T, child bool) {
		got = append(got, t.Name())
		if child != (t.Name() == "TestEachWay/child") {
			t.Errorf("%s: child = %v", t.Name(), child)
		}
	})
	if want := []string{"TestEachWay/in-process", "TestEachWay/child"}; !slices.Equal(got, want) {
		t.Errorf("subtests %q, want %q in that order", got, want)
	}
}

// TestAtOnce: the subtests run at the same time (each waits for the
// other to start, which one after the other never ends: bounded), as
// subtests of t, and AtOnce returns once both have ended.
func TestAtOnce(t *testing.T) {
	t.Parallel()
	started := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	var ended [2]bool
	sub := func(i int) testkit.Subtest {
		return testkit.Subtest{Name: fmt.Sprint("sub", i), F: func(t *testing.T) {
			close(started[i])
			select {
			case <-started[1-i]:
			case <-time.After(time.Minute):
				t.Errorf("%s: the other subtest did not start within a minute of this one", t.Name())
			}
			ended[i] = true
		}}
	}
	testkit.AtOnce(t, sub(0), sub(1))
	if !ended[0] || !ended[1] {
		t.Errorf("AtOnce returned with its subtests ended: %v, want both", ended)
	}
}

// TestParallelForWaits: -parallel becomes perCPU per CPU, or racePerCPU
// under the race detector, when the command line does not give it; a
// value once given (by it or by the command line) stays.
func TestParallelForWaits(t *testing.T) {
	f := flag.Lookup("test.parallel")
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	before := f.Value.String()
	t.Cleanup(func() { f.Value.Set(before) })
	want := strconv.Itoa(3 * runtime.GOMAXPROCS(0))
	if testkit.RaceDetector {
		want = strconv.Itoa(2 * runtime.GOMAXPROCS(0))
	}
	if given {
		want = before
	}
	testkit.ParallelForWaits(3, 2)
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel after ParallelForWaits(3, 2) = %s, want %s (given on the command line: %v, race detector: %v)", got, want, given, testkit.RaceDetector)
	}
	testkit.ParallelForWaits(5, 5)
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel after a second call = %s, want %s: a value once set stays", got, want)
	}
}

// TestWithoutRace: a command re-executing this test binary runs, after
// WithoutRace, a test binary without the race detector (built, under the
// detector; as it is, without it); a command that is not this test binary
// is an error.
func TestWithoutRace(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd, err := testkit.WithoutRace(ctx, exec.CommandContext(ctx, exe, "-test.run=^$"))
	if err != nil {
		t.Fatal(err)
	}
	if (cmd.Path != exe) != testkit.RaceDetector || cmd.Args[0] != cmd.Path {
		t.Errorf("race detector %v: WithoutRace ran %s (args %q), this binary is %s", testkit.RaceDetector, cmd.Path, cmd.Args, exe)
	}
	cmd.Env = append(os.Environ(), raceEnv+"=1")
	if out, err := cmd.Output(); err != nil || string(out) != "false" {
		t.Errorf("the child says race detector %q (%v), want false", out, err)
	}
	if _, err := testkit.WithoutRace(ctx, exec.Command("true")); testkit.RaceDetector && err == nil {
		t.Error("WithoutRace of a command other than this test binary: no error")
	}
}

// TestBuild: Build builds a main package once and returns a binary that
// runs it.
func TestBuild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	exe, err := testkit.Build(ctx, "./testdata/hello")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := testkit.Build(ctx, "./testdata/hello"); err != nil || again != exe {
		t.Errorf("a second Build = %s, %v; want the first's %s", again, err, exe)
	}
	if out, err := exec.CommandContext(ctx, exe).Output(); err != nil || string(out) != "hello" {
		t.Errorf("the built binary said %q (%v), want hello", out, err)
	}
	if _, err := testkit.Build(ctx, "./testdata/no-such-package"); err == nil {
		t.Error("Build of a package that does not exist: no error")
	}
}
