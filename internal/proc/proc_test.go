package proc_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/proc"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestCommandLine(t *testing.T) {
	got := proc.CommandLine(os.Getpid())
	if runtime.GOOS != "linux" {
		if got != "?" {
			t.Errorf("CommandLine off Linux = %q, want ?", got)
		}
		return
	}
	if !strings.Contains(got, os.Args[0]) {
		t.Errorf("CommandLine(self) = %q, want it to hold %q", got, os.Args[0])
	}
	if got := proc.CommandLine(-1); got != "?" {
		t.Errorf("CommandLine(-1) = %q, want ?", got)
	}
}
