package mcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

var (
	buildMu  sync.Mutex
	buildDir string                // made on the first GoBuild, removed by Main
	built    = map[string]string{} // package → its binary in buildDir
)

// GoBuild's build is bounded by the test's deadline, so a test never runs a
// stale binary and the second test to ask pays nothing. The binaries live in
// a temporary directory that Main removes when the tests end (without Main,
// it is left in os.TempDir).

// GoBuild builds the main package pkg once per test binary and returns a
// Target that runs it with args; a failed build fails the test with its output.
func GoBuild(t testing.TB, pkg string, args ...string) Target {
	// pkg is as go build takes it, from the test's package directory.
	t.Helper()
	exe, err := goBuild(t, pkg)
	if err != nil {
		t.Fatalf("mcptest.GoBuild(%s): %v", pkg, err)
	}
	return &cmdTarget{build: func() *exec.Cmd { return exec.Command(exe, args...) }, desc: fmt.Sprint(append([]string{pkg}, args...))}
}

func goBuild(t testing.TB, pkg string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if exe, ok := built[pkg]; ok {
		return exe, nil
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "mcptest-gobuild-")
		if err != nil {
			return "", err
		}
		buildDir = d
	}
	name := strings.Trim(strings.NewReplacer("/", "_", "\\", "_", ".", "_", ":", "_").Replace(pkg), "_")
	exe := filepath.Join(buildDir, fmt.Sprintf("%d-%s", len(built), name))
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	ctx, cancel, _ := bound.Context(context.Background(), t)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", exe, pkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (the test's deadline)", ctx.Err())
		}
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	built[pkg] = exe
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

// removeBuilt removes what GoBuild built.
func removeBuilt() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir, built = "", map[string]string{}
	}
}
