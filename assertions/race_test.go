//go:build race

package assertions_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// Under the race detector the children, the fake of the server batteries
// and of the host criteria and the quiet server, are built once without it
// (testdata/fake, testdata/quietserver): the batteries start the fake about
// 14 times each, the host tests 90 times, the evidence tests the quiet
// server 47 times, and a race-enabled process takes about ten times the CPU
// to start (under load, a third of a second each). In-process, the same
// code runs under the detector; the module root's examples
// (examples_test.go) run the host criteria their own way, the test binary
// re-executed, under it.
func init() {
	assertions.SetFakeCommand(func(ctx context.Context, flags ...string) (*exec.Cmd, error) {
		exe, err := binary("./testdata/fake")
		if err != nil {
			return nil, err
		}
		return exec.CommandContext(ctx, exe, flags...), nil
	})
}

// childFake is the fake configured by args as a child process.
func childFake(tb testing.TB, args ...string) mcptest.Target {
	return builtTarget(tb, "./testdata/fake", args...)
}

// quietChild is the quiet server configured by args as a child process.
func quietChild(args ...string) mcptest.Target {
	exe, err := binary("./testdata/quietserver")
	if err != nil {
		panic(err) // the tests' own build: nothing to test without it
	}
	return mcptest.Command(exe, args...)
}

func builtTarget(tb testing.TB, pkg string, args ...string) mcptest.Target {
	exe, err := binary(pkg)
	if err != nil {
		tb.Fatal(err)
	}
	return mcptest.Command(exe, args...)
}

var built struct {
	mu  sync.Mutex
	dir string
	exe map[string]string
}

// binary builds the main package pkg without the race detector, once,
// within five minutes, and returns its path.
func binary(pkg string) (string, error) {
	built.mu.Lock()
	defer built.mu.Unlock()
	if exe, ok := built.exe[pkg]; ok {
		return exe, nil
	}
	if built.dir == "" {
		d, err := os.MkdirTemp("", "assertions-built-")
		if err != nil {
			return "", err
		}
		built.dir, built.exe = d, map[string]string{}
	}
	exe := filepath.Join(built.dir, filepath.Base(pkg))
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, goTool, "build", "-o", exe, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	built.exe[pkg] = exe
	return exe, nil
}

// removeBuilt removes what binary built.
func removeBuilt() {
	built.mu.Lock()
	defer built.mu.Unlock()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
