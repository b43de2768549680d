package mcptest_test

import (
	"context"
	"os"
	"os/exec"
	"os/signal"
	"testing"
	"time"
)

// mainExitEnv makes TestMain exit as mcptest.Main does by default ("main")
// or with os.Exit ("os.Exit"), for TestMainExitsWithoutRaceSleep's child.
const mainExitEnv = "MCPSTDIO_TEST_MAIN_EXIT"

// TestMainExitsWithoutRaceSleep: under the race detector, a passing test
// binary whose TestMain is mcptest.Main exits without the detector's sleep
// at exit. The child is this test binary running TestMainExitChild with the
// sleep set to a minute: with mcptest.Main's exit it ends long before that;
// with os.Exit's (the control, the sleep set to 1.5 s) it takes the sleep,
// which shows the child has the threads the detector sleeps for.
func TestMainExitsWithoutRaceSleep(t *testing.T) {
	if !raceEnabled {
		t.Skip("the sleep at exit is the race detector's: run with -race")
	}
	t.Parallel()
	run := func(exit, sleepMs string) time.Duration {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestMainExitChild$", "-test.count", "1")
		cmd.Env = append(os.Environ(), mainExitEnv+"="+exit, "GORACE=atexit_sleep_ms="+sleepMs)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(start)
		if err != nil {
			t.Fatalf("the child exiting as %s: %v after %v (bounded at 30 s); output:\n%s", exit, err, took.Round(time.Millisecond), out)
		}
		return took
	}
	if took := run("os.Exit", "1500"); took < 1500*time.Millisecond {
		t.Fatalf("the control child (os.Exit) ended in %v, within the detector's 1.5 s sleep at exit: it has nothing to sleep for, and this test shows nothing", took)
	}
	run("main", "60000") // an error if it takes the minute: bounded at 30 s
}

// TestMainExitChild is TestMainExitsWithoutRaceSleep's child: it leaves the
// signal loop running (goleak allows it), a thread the race detector's sleep
// at exit waits for.
func TestMainExitChild(t *testing.T) {
	if os.Getenv(mainExitEnv) == "" {
		t.Skip("the child of TestMainExitsWithoutRaceSleep")
	}
	signal.Notify(make(chan os.Signal, 1), os.Interrupt)
}
