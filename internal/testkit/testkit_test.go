package testkit_test

import (
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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
