// Package testkit holds what the library's own tests share: running a test
// against a server in-process and as a child process under the same
// subtest names, in the same order, how many tests that wait run at once,
// how a helper child runs without the race detector, and how a test binary
// exits.
package testkit

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// Ways are the two ways a server runs in the tests, in the order they run:
// a goroutine of the test binary on real pipes, and a child process.
var Ways = []string{"in-process", "child"}

// EachWay runs f as two subtests of t, "in-process" and "child", in that
// order; child tells f which.
func EachWay(t *testing.T, f func(t *testing.T, child bool)) {
	t.Helper()
	for _, way := range Ways {
		t.Run(way, func(t *testing.T) { f(t, way == "child") })
	}
}

// EachWayB is EachWay for benchmarks.
func EachWayB(b *testing.B, f func(b *testing.B, child bool)) {
	b.Helper()
	for _, way := range Ways {
		b.Run(way, func(b *testing.B) { f(b, way == "child") })
	}
}

// Subtest is a subtest for AtOnce: its name and its function.
type Subtest struct {
	Name string
	F    func(t *testing.T)
}

// AtOnce runs each of subtests as a subtest of t, all at once and now: t.Run
// from a goroutine of its own, without t.Parallel. Parallel subtests of a
// parallel test queue for a -parallel slot behind every other test of the
// package; subtests that mostly wait (a replay's patience, the one rule's
// quiet windows, a bound a server runs out), queued last, are the package's
// last seconds with the machine idle. It returns when all have ended.
func AtOnce(t *testing.T, subtests ...Subtest) {
	t.Helper()
	var wg sync.WaitGroup
	for _, st := range subtests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(st.Name, st.F)
		}()
	}
	wg.Wait()
}

// ParallelForWaits sets go test's -parallel to perCPU tests per CPU, and
// under the race detector to racePerCPU per CPU (0: leave go test's one
// per CPU), unless the command line gives it: for a package whose tests
// mostly wait (observation windows, a peer's own timeout, the bounds a
// misbehaving server runs out) rather than compute, so that one test per
// CPU would leave the machine idle. Under the detector the test binary
// computes several times as much, and too many tests at once starve the
// in-process servers and the timing their verdicts rest on; children
// built without it (a command the tests build, the fake) are not slowed.
// Call it in TestMain, before m.Run.
func ParallelForWaits(perCPU, racePerCPU int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	n := perCPU
	if raceDetector {
		n = racePerCPU
	}
	if !given && n > 0 {
		flag.Set("test.parallel", strconv.Itoa(n*runtime.GOMAXPROCS(0)))
	}
}

// Exit ends the test binary with code, as os.Exit does, except that a
// passing run built with the race detector (and without coverage, which
// os.Exit's hooks write) does not wait out the detector's sleep at exit
// (GORACE atexit_sleep_ms, default 1s, "to let other threads report
// races"): m.Run has already failed the run for any race it saw, so the
// sleep is a second of nothing per package. Give it to goleak.VerifyTestMain
// or mcptest.Main as goleak.Cleanup(testkit.Exit). It also removes what
// WithoutRace and Build built, and the directories of PrivateState.
func Exit(code int) {
	removeBuilt()
	removeState()
	if code == 0 && raceDetector && testing.CoverMode() == "" {
		syscall.Exit(0)
	}
	os.Exit(code)
}
