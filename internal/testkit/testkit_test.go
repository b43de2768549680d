package testkit_test

import (
	"flag"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

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

// TestParallelForWaits: -parallel becomes perCPU per CPU when the command
// line does not give it and the race detector is not built in, and a value
// once given (by it or by the command line) stays.
func TestParallelForWaits(t *testing.T) {
	f := flag.Lookup("test.parallel")
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	before := f.Value.String()
	t.Cleanup(func() { f.Value.Set(before) })
	want := strconv.Itoa(3 * runtime.GOMAXPROCS(0))
	if given || testkit.RaceDetector {
		want = before
	}
	testkit.ParallelForWaits(3)
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel after ParallelForWaits(3) = %s, want %s (given on the command line: %v, race detector: %v)", got, want, given, testkit.RaceDetector)
	}
	testkit.ParallelForWaits(5)
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel after a second call = %s, want %s: a value once set stays", got, want)
	}
}
