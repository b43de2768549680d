package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
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
	buildDir string            // made by the first build, removed by Exit
	built    map[string]string // what was built (its go command's words) → the binary, in buildDir
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
	// The test binary of the package in the working directory (where go
	// test runs a package's tests).
	exe, err := build(ctx, "norace.test", "test", "-c", "-race=false", "-vet=off")
	if err != nil {
		return nil, fmt.Errorf("testkit.WithoutRace: %w", err)
	}
	cmd.Path, cmd.Args[0] = exe, exe
	return cmd, nil
}

// Build builds the main package pkg (as go build takes it, from the
// package directory the tests run in) without the race detector, once per
// test binary, bounded by ctx, and returns the binary; Exit removes it.
func Build(ctx context.Context, pkg string) (string, error) {
	return build(ctx, filepath.Base(pkg), "build", pkg)
}

// build runs the go command with words and -o, once per words, into
// buildDir under name.
func build(ctx context.Context, name string, words ...string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	key := fmt.Sprint(words)
	if exe, ok := built[key]; ok {
		return exe, nil
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "testkit-built-")
		if err != nil {
			return "", err
		}
		buildDir, built = d, map[string]string{}
	}
	exe := filepath.Join(buildDir, fmt.Sprintf("%d-%s", len(built), name))
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	args := append([]string{words[0], "-o", exe}, words[1:]...)
	if words[0] == "test" {
		args = append(args, ".")
	}
	out, err := exec.CommandContext(ctx, goTool(), args...).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (its bound)", ctx.Err())
		}
		return "", fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	built[key] = exe
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

// removeBuilt removes what was built.
func removeBuilt() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir, built = "", nil
	}
}
