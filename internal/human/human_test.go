package human_test

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/human"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 815: "815 bytes", 10 << 10: "10 KiB", 64<<10 + 5: "64 KiB", 2411724: "2.3 MiB", 3 << 30: "3.0 GiB"} {
		if got := human.Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{1500 * time.Nanosecond: "2µs", 1234567 * time.Nanosecond: "1ms", 1260 * time.Millisecond: "1.3s", 12600 * time.Millisecond: "13s", 90 * time.Second: "1m30s"} {
		if got := human.Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func Example() {
	fmt.Println(human.Size(64<<10), human.Duration(3100*time.Millisecond))
	// Output: 64 KiB 3.1s
}
