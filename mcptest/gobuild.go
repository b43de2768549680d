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

// GoBuild builds the main package pkg once per test binary and returns a
// Target that runs it with args: a test therefore never runs a stale binary,
// and the second test to ask pays nothing. pkg is as go build takes it where
// go test runs the test: a relative path is from the test's package
// directory, not the module root (in a test of the package in server/,
// "../cmd/myserver"), or give the import path
// ("example.com/myserver/cmd/myserver"). The build is bounded by the test's
// deadline; a failed build fails the test with the compiler's output. The
// binaries live in a temporary directory that Main removes when the tests
// end (without Main, it is left in os.TempDir).
func GoBuild(t testing.TB, pkg string, args ...string) Target {
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
	if err := checkDir(pkg); err != nil {
		return "", err
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

// checkDir says, for a relative pkg that is not a directory, where it
// looked and which import path may have been meant.
func checkDir(pkg string) error {
	if !strings.HasPrefix(pkg, ".") {
		return nil // an import path
	}
	abs, err := filepath.Abs(pkg)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return nil
	}
	msg := fmt.Sprintf("no directory %s: a relative path is from the test's package directory, where go test runs", abs)
	if root, mod := moduleOf(filepath.Dir(abs)); mod != "" {
		if rel, err := filepath.Rel(root, filepath.Join(root, pkg)); err == nil && !strings.HasPrefix(rel, "..") {
			if fi, err := os.Stat(filepath.Join(root, rel)); err == nil && fi.IsDir() {
				return fmt.Errorf("%s; from the module root it is the import path %q", msg, mod+"/"+filepath.ToSlash(rel))
			}
		}
	}
	return fmt.Errorf("%s; or give the main package's import path", msg)
}

// moduleOf returns the root directory and path of the module dir is in,
// from the nearest go.mod above it, or "" if there is none.
func moduleOf(dir string) (root, path string) {
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for line := range strings.Lines(string(b)) {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
					return dir, strings.Trim(f[1], `"`)
				}
			}
			return dir, ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ""
		}
		dir = parent
	}
}
