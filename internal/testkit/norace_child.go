package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
)

// A helper child (mcptest.HelperCommand) is this test binary re-executed.
// Under the race detector that costs a race-enabled process start (about
// ten times the CPU of a plain one) and the detector's overhead on all the
// child's work, though the child is the server the test drives, not the
// code under test. WithoutRace runs it from the same package's test binary
// built without the detector: the same helpers, arguments and environment.

var (
	buildMu  sync.Mutex
	buildDir string // made by the first WithoutRace under the race detector, removed by Exit
	noRace   string // the test binary built without the race detector, in buildDir
)

// WithoutRace returns cmd, a helper child of this test binary (from
// mcptest.HelperCommand), set to run the same package's test binary built
// without the race detector when this one has it; without the detector,
// cmd as it is. The build is once per test binary, bounded by ctx (give
// it the test's: cmd's own context will do); it fails only when the build
// does.
func WithoutRace(ctx context.Context, cmd *exec.Cmd) (*exec.Cmd, error) {
	if !raceDetector {
		return cmd, nil
	}
	if self, err := os.Executable(); err != nil || cmd.Path != self {
		return nil, fmt.Errorf("testkit.WithoutRace: %s is not this test binary (%s, %v)", cmd.Path, self, err)
	}
	exe, err := buildNoRace(ctx)
	if err != nil {
		return nil, fmt.Errorf("testkit.WithoutRace: %w", err)
	}
	cmd.Path, cmd.Args[0] = exe, exe
	return cmd, nil
}

// buildNoRace builds the test binary of the package in the working
// directory (where go test runs a package's tests) without the race
// detector, once.
func buildNoRace(ctx context.Context) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if noRace != "" {
		return noRace, nil
	}
	d, err := os.MkdirTemp("", "testkit-norace-")
	if err != nil {
		return "", err
	}
	exe := filepath.Join(d, "norace.test")
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	out, err := exec.CommandContext(ctx, goTool(), "test", "-c", "-race=false", "-vet=off", "-o", exe, ".").CombinedOutput()
	if err != nil {
		os.RemoveAll(d)
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (its bound)", ctx.Err())
		}
		return "", fmt.Errorf("go test -c without -race: %v\n%s", err, out)
	}
	buildDir, noRace = d, exe
	return exe, nil
}

// goTool returns the go command: the one on PATH, or the one of the
// toolchain that built this binary.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// removeBuilt removes what WithoutRace built.
func removeBuilt() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir, noRace = "", ""
	}
}
