// Package cmdtest is what the commands' tests share (cmd/mcpstdio and
// cmd/mcpstdio-proxy, which run the same proxy): building a command once,
// running it to its end, and starting it with pipes the test holds.
package cmdtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// Build builds the main package pkg (as go build takes it: a directory or
// an import path) into dir as name (name.exe on Windows) and returns the
// binary's path, for a TestMain; the go command is the one in PATH (go
// test puts its own first). The build is bounded by five minutes.
func Build(dir, pkg, name string) (string, error) {
	bin := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// Bound is how long a test waits for a command: two minutes, or until ten
// seconds before the test's deadline if that is sooner.
func Bound(t testing.TB) time.Duration {
	d := 2 * time.Minute
	if dl, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := dl.Deadline(); ok {
			d = min(d, time.Until(dl)-10*time.Second)
		}
	}
	return d
}

// Result is how a run of a command ended.
type Result struct {
	Stdout, Stderr string
	Code           int // the exit status; 128+n if signal n killed it
}

// Run runs bin with args to its end, with env added to this process's
// environment and stdin as its standard input (nil: the null device),
// bounded by limit and by the test's deadline (Bound); it fails the test
// if the command does not finish or cannot start.
func Run(t testing.TB, limit time.Duration, env []string, stdin io.Reader, bin string, args ...string) Result {
	t.Helper()
	limit = min(limit, Bound(t))
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("%s %q did not finish within %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, limit, res.Stdout, res.Stderr)
	}
	res.Code, err = exitCode(err)
	if err != nil {
		t.Fatalf("%s %q: %v", filepath.Base(bin), args, err)
	}
	return res
}

// exitCode is the exit status Wait's error err says, with an error if the
// command did not run.
func exitCode(err error) (int, error) {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return 0, err
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ee.ExitCode(), nil
}

// Running is a command running with pipes the test holds: its stdin, its
// stdout (buffered), and its stderr, collected.
type Running struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser
	Stdout *bufio.Reader
	Stderr *bytes.Buffer // complete once Wait has returned
	done   chan struct{}
	code   int
}

// Start starts bin with args, with env added to this process's
// environment, bounded by the test's deadline (Bound). prepare, if not
// nil, may change the command before it starts (its directory). The
// test's cleanup closes its stdin and waits for its end.
func Start(t testing.TB, env []string, prepare func(*exec.Cmd), bin string, args ...string) *Running {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), Bound(t))
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), env...)
	r := &Running{Cmd: cmd, Stderr: &bytes.Buffer{}, done: make(chan struct{})}
	var err error
	if r.Stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Stdout = bufio.NewReader(out)
	cmd.Stderr = r.Stderr
	if prepare != nil {
		prepare(cmd)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		var err error
		if r.code, err = exitCode(cmd.Wait()); err != nil {
			r.code = -1
		}
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Stdin.Close()
		<-r.done
	})
	return r
}

// Wait waits for the command's end, bounded (Bound), and returns its exit
// status (-1 if it could not be waited for).
func (r *Running) Wait(t testing.TB) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(Bound(t)):
		t.Fatalf("%s did not end\nstderr:\n%s", r.Cmd, r.Stderr)
		return 0
	}
}

// Call writes line and a newline to the command's stdin and returns the
// next line it writes on stdout, newline included.
func (r *Running) Call(t testing.TB, line string) string {
	t.Helper()
	if _, err := io.WriteString(r.Stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
	got, err := r.Stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the response to %s: %v\nstderr:\n%s", line, err, r.Stderr)
	}
	return got
}
