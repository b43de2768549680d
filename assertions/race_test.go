//go:build race

package assertions_test

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
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
	exe, err := binary("./testdata/fake")
	if err != nil {
		tb.Fatal(err)
	}
	return mcptest.Command(exe, args...)
}

// quietChild is the quiet server configured by args as a child process.
func quietChild(args ...string) mcptest.Target {
	exe, err := binary("./testdata/quietserver")
	if err != nil {
		panic(err) // the tests' own build: nothing to test without it
	}
	return mcptest.Command(exe, args...)
}

// binary builds the main package pkg without the race detector, once,
// within five minutes (testkit.Exit removes it).
func binary(pkg string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	return testkit.Build(ctx, pkg)
}
