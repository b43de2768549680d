package fakeserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
)

// The environment variables through which the subprocess tool tells its
// child what to do. A command given to WithSubprocessCommand must honour
// them.
const (
	// EnvSubprocessStdout is the number of bytes the child writes to stdout.
	EnvSubprocessStdout = "FAKESERVER_SUBPROCESS_STDOUT"
	// EnvSubprocessStderr is the number of bytes the child writes to stderr.
	EnvSubprocessStderr = "FAKESERVER_SUBPROCESS_STDERR"
	// EnvSubprocessHold is "1" when the child must then keep running until
	// it is killed (it may block reading its stdin, which stays open).
	EnvSubprocessHold = "FAKESERVER_SUBPROCESS_HOLD"
)

// defaultSubprocessScript is the sh script the subprocess tool runs unless
// WithSubprocessCommand says otherwise: exact byte counts of 'x' to stdout
// and 'y' to stderr, then, when held, it blocks reading stdin.
const defaultSubprocessScript = `head -c "$` + EnvSubprocessStdout + `" /dev/zero | tr '\0' x; ` +
	`head -c "$` + EnvSubprocessStderr + `" /dev/zero | tr '\0' y >&2; ` +
	`if [ "$` + EnvSubprocessHold + `" = 1 ]; then exec cat >/dev/null; fi`

// subprocessWaitDelay bounds how long Wait waits for the child's output
// pipes after the child exited or was killed (a grandchild may hold them).
const subprocessWaitDelay = 5 * time.Second

type subprocessArgs struct {
	StdoutBytes int64 `json:"stdoutBytes" help:"bytes the child writes on its stdout"`
	StderrBytes int64 `json:"stderrBytes" help:"bytes the child writes on its stderr"`
	Hold        bool  `json:"hold" help:"keep the child running until the call is cancelled"`
	Limit       int   `json:"limit" help:"bytes of each of its outputs kept, head and tail (default 4096)"`
}

// toolSubprocess runs a real child writing stdoutBytes and stderrBytes,
// drains both through a bounded pipes.Capture, and returns the kept head and
// tail with the exit code and how many bytes were dropped. With hold the
// child keeps running until the request is cancelled; then its process group
// is killed. With a progressToken, a progress notification says when the
// child has started.
func (s *Server) toolSubprocess(w *work, a subprocessArgs) (*frame, error) {
	if a.StdoutBytes < 0 || a.StderrBytes < 0 {
		return nil, argError("subprocess: byte counts must not be negative")
	}
	limit := cmpOr(a.Limit, 4096)
	argv := s.cfg.subprocess
	if len(argv) == 0 {
		argv = []string{"sh", "-c", defaultSubprocessScript}
	}
	cmd := exec.CommandContext(w.ctx, argv[0], argv[1:]...)
	hold := "0"
	if a.Hold {
		hold = "1"
	}
	cmd.Env = append(os.Environ(),
		EnvSubprocessStdout+"="+strconv.FormatInt(a.StdoutBytes, 10),
		EnvSubprocessStderr+"="+strconv.FormatInt(a.StderrBytes, 10),
		EnvSubprocessHold+"="+hold)
	stdout, stderr := pipes.NewCapture(limit), pipes.NewCapture(limit)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The child's stdin is a pipe we hold open, so a held child blocks on it
	// and never reads the server's own stdin.
	in, err := pipes.New()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	cmd.Stdin = in.R
	setProcessGroup(cmd)
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
	cmd.WaitDelay = subprocessWaitDelay
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("subprocess: %w", err)
	}
	in.R.Close()
	s.progress(w, 0, 0, fmt.Sprintf("subprocess: started pid %d", cmd.Process.Pid))
	werr := cmd.Wait()
	if w.ctx.Err() != nil {
		s.update(func(r *Report) {
			w.childKilled = true
			r.ChildrenKilled++
		})
		return nil, w.ctx.Err()
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		code = ee.ExitCode()
	case werr != nil:
		return nil, fmt.Errorf("subprocess: %w", werr)
	}
	text := fmt.Sprintf("subprocess exited with code %d; stdout: %d bytes, %d dropped; stderr: %d bytes, %d dropped\n--- stdout (head and tail) ---\n%s\n--- stderr (head and tail) ---\n%s",
		code, stdout.Total(), stdout.Dropped(), stderr.Total(), stderr.Dropped(), stdout.String(), stderr.String())
	return textResult(w, text, map[string]any{
		"exitCode":      code,
		"stdoutBytes":   stdout.Total(),
		"stdoutDropped": stdout.Dropped(),
		"stderrBytes":   stderr.Total(),
		"stderrDropped": stderr.Dropped(),
		"truncated":     stdout.Truncated() || stderr.Truncated(),
	}), nil
}
