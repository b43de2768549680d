package integration_test

import (
	"bufio"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/poll"
)

// The npm packages, for real: npm/build.sh builds them from this checkout
// (every system's binary, cross-compiled), verdaccio (installed from
// registry's lockfile) serves them on loopback, and what a user of Node
// without Go does is done against it: the GitHub Actions workflow of
// docs/install.md, its run steps as shell commands in a copy of a Node
// project (integration/ts), and an install in an empty folder.

// registryDir holds verdaccio, installed by `npm ci`.
const registryDir = "registry"

// TestNPMPackages builds, publishes and installs the npm packages, and runs
// the documented workflow and commands with them.
func TestNPMPackages(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the workflow's steps run in bash, the shim's signals are POSIX")
	}
	verdaccio, err := filepath.Abs(filepath.Join(registryDir, "node_modules", "verdaccio", "bin", "verdaccio"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(verdaccio); err != nil {
		t.Skipf("needs `npm ci` in integration/%s: %v", registryDir, err)
	}
	if _, err := os.Stat(filepath.Join("ts", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skipf("needs `npm ci` in integration/ts: %v", err)
	}
	workflow, steps := workflowSteps(t)
	version := regexp.MustCompile(`mcpstdio@(\d+\.\d+\.\d+\S*)`).FindStringSubmatch(workflow)
	if version == nil {
		t.Fatalf("docs/install.md's workflow pins no mcpstdio@VERSION:\n%s", workflow)
	}
	root := t.TempDir()
	out := filepath.Join(root, "packages")
	commit, _ := exec.Command("git", "rev-parse", "HEAD").Output() // what build.sh stamps
	build := exec.Command("sh", filepath.Join("..", "npm", "build.sh"), version[1], out)
	began := time.Now()
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("npm/build.sh: %v\n%s", err, b)
	}
	t.Logf("npm/build.sh %s: %v", version[1], time.Since(began).Round(time.Second))
	reg := startRegistry(t, verdaccio, filepath.Join(root, "registry"))
	env := npmEnv(t, root, reg)
	for _, pkg := range []string{"linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "win32-x64", "win32-arm64", "mcpstdio"} {
		shell(t, env, filepath.Join(out, pkg), 0, "npm publish --access public")
	}

	t.Run("workflow", func(t *testing.T) {
		// A Node project: integration/ts's package files and server.
		project := filepath.Join(root, "project")
		os.MkdirAll(project, 0o755)
		for _, f := range []string{"package.json", "package-lock.json", "server.mjs"} {
			b, err := os.ReadFile(filepath.Join("ts", f))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(project, f), b, 0o644)
		}
		for i, step := range steps {
			last := i == len(steps)-1
			res := shell(t, env, project, -1, step)
			if !last {
				if res.code != 0 {
					t.Fatalf("step %q: exit %d\n%s", step, res.code, res.out)
				}
				continue
			}
			// The probe: its exit status is its verdicts'.
			b, err := os.ReadFile(filepath.Join(project, "mcpstdio.xml"))
			if err != nil {
				t.Fatalf("step %q wrote no JUnit file: %v\n%s", step, err, res.out)
			}
			var junit struct {
				Failures int `xml:"failures,attr"`
				Suites   []struct {
					Name  string `xml:"name,attr"`
					Cases []struct {
						Name string `xml:"name,attr"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(b, &junit); err != nil || len(junit.Suites) != 1 {
				t.Fatalf("the JUnit file: %v\n%s", err, b)
			}
			var cases []string
			for _, c := range junit.Suites[0].Cases {
				cases = append(cases, c.Name)
			}
			if !slices.Equal(cases, assertions.ServerCriterionNames()) || junit.Suites[0].Name != "node server.mjs" {
				t.Errorf("the JUnit file has suite %q with %q, want node server.mjs with every criterion", junit.Suites[0].Name, cases)
			}
			if want := min(junit.Failures, 1); res.code != want {
				t.Errorf("step %q: exit %d with %d failures in its JUnit file, want %d\n%s", step, res.code, junit.Failures, want, res.out)
			}
			if !strings.Contains(res.out, "node server.mjs\n  PASS  stdout-clean") {
				t.Errorf("step %q printed no verdicts of node server.mjs:\n%s", step, res.out)
			}
			t.Logf("%s: exit %d, %d failures", step, res.code, junit.Failures)
		}
		// The command the page shows first, in the same project.
		if res := shell(t, env, project, -1, docsNPXCommand(t)); !strings.Contains(res.out, "PASS  stdout-clean") {
			t.Errorf("docs/install.md's npx command printed no verdicts:\n%s", res.out)
		}
	})

	t.Run("install", func(t *testing.T) {
		dir := filepath.Join(root, "empty")
		os.MkdirAll(dir, 0o755)
		shell(t, env, dir, 0, "npm init -y >/dev/null && npm install mcpstdio@"+version[1])
		ents, _ := os.ReadDir(filepath.Join(dir, "node_modules", "@mcpstdio"))
		var got []string
		for _, e := range ents {
			got = append(got, e.Name())
		}
		if want := []string{npmSystem()}; !slices.Equal(got, want) {
			t.Errorf("node_modules/@mcpstdio holds %q, want only this system's %q", got, want)
		}
		res := shell(t, env, dir, 0, "npx mcpstdio version")
		if want := fmt.Sprintf("mcpstdio v%s (commit %s", version[1], strings.TrimSpace(string(commit))); !strings.HasPrefix(res.out, want) {
			t.Errorf("npx mcpstdio version = %q, want it to begin %q", res.out, want)
		}
		if res := shell(t, env, dir, 2, "npx mcpstdio version extra"); !strings.Contains(res.out, "unexpected argument") {
			t.Errorf("npx mcpstdio version extra: %q", res.out)
		}
		shimSignals(t, env, dir)
	})
}

// workflowSteps returns the GitHub Actions workflow of docs/install.md and
// its run steps.
func workflowSteps(t *testing.T) (string, []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```yaml\n")
	workflow, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/install.md has no ```yaml workflow")
	}
	var steps []string
	for _, line := range strings.Split(workflow, "\n") {
		if step, ok := strings.CutPrefix(strings.TrimSpace(line), "- run: "); ok {
			if strings.HasPrefix(step, "|") || strings.HasPrefix(step, ">") {
				t.Fatalf("docs/install.md's workflow has a multi-line run step, which this test does not read: %s", line)
			}
			steps = append(steps, step)
		}
	}
	if len(steps) == 0 {
		t.Fatal("docs/install.md's workflow has no run steps")
	}
	return workflow, steps
}

// docsNPXCommand returns the npx command of docs/install.md's first sh
// block.
func docsNPXCommand(t *testing.T) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join("..", "docs", "install.md"))
	_, rest, _ := strings.Cut(string(b), "```sh\n")
	cmd, _, _ := strings.Cut(rest, "\n")
	if !strings.HasPrefix(cmd, "npx mcpstdio ") {
		t.Fatalf("docs/install.md's first sh block is %q, want an npx mcpstdio command", cmd)
	}
	return cmd
}

// npmSystem is this system's package name, as npm names it.
func npmSystem() string {
	cpu := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return runtime.GOOS + "-" + cpu
}

// startRegistry starts verdaccio on a free loopback port, its storage in
// dir, and returns its URL once it answers. It serves what is published to
// it of mcpstdio's packages, and nothing else of them; other packages (a
// project's own dependencies) it takes from the npm registry. It is killed
// at the end of the test.
func startRegistry(t *testing.T, verdaccio, dir string) string {
	t.Helper()
	os.MkdirAll(dir, 0o755)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // verdaccio takes the port; a small race with other programs, which would fail the start
	config := fmt.Sprintf(`storage: %[1]s/storage
auth:
  htpasswd:
    file: %[1]s/htpasswd
    max_users: -1
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
packages:
  'mcpstdio':
    access: $all
    publish: $all
  '@mcpstdio/*':
    access: $all
    publish: $all
  '**':
    access: $all
    proxy: npmjs
web:
  enable: false
middlewares:
  audit:
    enabled: false
log: {type: stdout, format: json, level: warn}
`, dir)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "verdaccio.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command("node", verdaccio, "--config", filepath.Join(dir, "config.yaml"), "--listen", addr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	url := "http://" + addr + "/"
	log := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	client := &http.Client{Timeout: 10 * time.Second}
	exited := false
	// Nothing says when it listens but its answer.
	poll.Wait(t, 2*time.Minute, "verdaccio answering on "+url, func() bool {
		select {
		case <-done:
			exited = true
			return true
		default:
		}
		resp, err := client.Get(url + "-/ping")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, log)
	if exited {
		t.Fatalf("verdaccio exited: %v\n%s", cmd.ProcessState, log())
	}
	return url
}

// npmEnv is the environment of npm and the workflow's steps: the local
// registry (a token, which it does not check, for npm publish), a cache of
// their own, and a PATH with node and no Go.
func npmEnv(t *testing.T, root, registry string) []string {
	t.Helper()
	npmrc := filepath.Join(root, "npmrc")
	host := strings.TrimPrefix(registry, "http:")
	if err := os.WriteFile(npmrc, []byte(host+":_authToken=anonymous\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, "go")); err != nil {
			path = append(path, d)
		}
	}
	if _, err := exec.LookPath("go"); err == nil && len(path) == len(filepath.SplitList(os.Getenv("PATH"))) {
		t.Fatal("go is on the PATH but in none of its directories")
	}
	env := []string{"PATH=" + strings.Join(path, string(filepath.ListSeparator)), "npm_config_registry=" + registry,
		"npm_config_userconfig=" + npmrc, "npm_config_cache=" + filepath.Join(root, "npm-cache"),
		"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "PATH" && !strings.HasPrefix(strings.ToLower(k), "npm_config_") {
			env = append(env, kv)
		}
	}
	return env
}

// shellResult is how a shell command ended: its exit status and its
// output, stdout and stderr together.
type shellResult struct {
	code int
	out  string
}

// shell runs command with bash -e, as GitHub Actions runs a step, in dir,
// bounded by ten minutes; want is the exit status it must have (-1: any).
func shell(t *testing.T, env []string, dir string, want int, command string) shellResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", command)
	cmd.Env, cmd.Dir = env, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	b, err := cmd.CombinedOutput()
	res := shellResult{out: string(b)}
	if ee, ok := err.(*exec.ExitError); ok {
		res.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, b)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s (in %s) did not finish within 10 minutes\n%s", command, dir, b)
	}
	if want >= 0 && res.code != want {
		t.Fatalf("%s (in %s): exit %d, want %d\n%s", command, dir, res.code, want, b)
	}
	return res
}

// shimSignals checks the package's bin script: SIGTERM to it reaches the
// binary (here the fake server, which ends on SIGTERM with exit status
// 0), and the script ends as the binary did, leaving nothing running.
func shimSignals(t *testing.T, env []string, dir string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "mcpstdio"), "fake")
	cmd.Env, cmd.Dir = env, dir
	cmd.Stderr = io.Discard
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.Contains(line, `"id":1`) {
		t.Fatalf("the fake through the shim answered %q, %v", line, err)
	}
	// The binary is the script's child: the one process whose parent it is.
	kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	var child int
	fmt.Sscan(string(kids), &child)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the shim after SIGTERM: %v (%v), want exit status 0: the fake's, which ends on SIGTERM", err, cmd.ProcessState)
		}
	case <-time.After(time.Minute):
		t.Fatal("the shim did not end within a minute of SIGTERM")
	}
	if child > 0 {
		if err := syscall.Kill(child, 0); err == nil {
			t.Errorf("the binary (pid %d) still runs after the shim ended", child)
			syscall.Kill(child, syscall.SIGKILL)
		}
	} else if runtime.GOOS == "linux" {
		t.Errorf("found no child of the shim (%q)", kids)
	}
}
