package mcptest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/internal/child"
)

// ExitHow says how a server ended; the zero value means it is still
// running.
type ExitHow string

// How a server ended.
const (
	// ExitOnItsOwn: it ended before Close asked it to.
	ExitOnItsOwn ExitHow = "exited"
	// ExitAfterStdinClose: it ended once Close closed its stdin (and, for
	// an in-process server, cancelled its context).
	ExitAfterStdinClose ExitHow = "stdin closed"
	// ExitForced: it ended once Close forced it, by the last step in
	// Exit.Signals: a signal (SIGTERM, SIGQUIT, SIGKILL) for a process,
	// "close pipes" for an in-process server, whose pipes Close closed.
	ExitForced ExitHow = "forced"
	// ExitStuck: it did not end at all (Close reports it).
	ExitStuck ExitHow = "stuck"
	// ExitPanicked: an in-process server panicked; Exit.Err holds the
	// panic and its stack.
	ExitPanicked ExitHow = "panicked"
)

// Exit says how a server ended.
type Exit struct {
	How ExitHow
	// Code is the exit code, or -1 for a process killed by a signal and
	// for an in-process server.
	Code int
	// Signal is the signal that killed the process, if one did.
	Signal string
	// Err is the in-process ServeFunc's error (or its panic, with its
	// stack), or the error of cmd.Wait other than a non-zero exit.
	Err error
	// Signals lists what Close sent, in order: SIGTERM, SIGQUIT and SIGKILL
	// to a process's group, "close pipes" for an in-process server whose
	// pipes Close closed.
	Signals []string
	// Escaped lists the processes, "pid N (command line)", that Close found
	// outside the server's process group (setsid) carrying the
	// MCPSTDIO_SESSION environment variable it gave the server: it killed
	// each (Linux).
	Escaped []string
}

// String describes the ending, e.g. "after SIGTERM, killed by SIGTERM
// (signals sent: SIGTERM)".
func (e Exit) String() string {
	if e.How == "" {
		return "running"
	}
	s := string(e.How)
	if e.How == ExitForced && len(e.Signals) > 0 {
		s = "after " + e.Signals[len(e.Signals)-1]
	}
	switch {
	case e.Signal != "":
		s += ", killed by " + e.Signal
	case e.Code >= 0:
		s += fmt.Sprintf(", exit code %d", e.Code)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if len(e.Signals) > 0 {
		s += " (signals sent: " + strings.Join(e.Signals, ", ") + ")"
	}
	if len(e.Escaped) > 0 {
		s += "; killed what had escaped its process group: " + strings.Join(e.Escaped, ", ")
	}
	return s
}

// sessionMarker is the environment variable that marks a child server
// and what it starts; sessionSeq numbers the servers of this process.
const sessionMarker = "MCPSTDIO_SESSION"

var sessionSeq atomic.Int64

// process is a running server.
type process interface {
	pid() int                                          // 0 for in-process servers
	done() <-chan struct{}                             // closed when the server has ended
	stop(grace time.Duration, closeStdin func()) error // close stdin, escalate until it ends
	exit() Exit
	stacks() string // goroutine stacks of an in-process server
	// endEscaped kills, once the server has ended, what it started that
	// left its process group, and records it in Exit.Escaped.
	endEscaped() []string
}

type childProc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	marker string // sessionMarker=value in its environment

	mu      sync.Mutex
	waitErr error
	ex      Exit
	closing bool
}

func startChild(s *Session, cmd *exec.Cmd) (*childProc, error) {
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.stdin.R, s.stdout.W, s.stderr.W
	if cmd.SysProcAttr == nil {
		setProcessGroup(cmd)
	}
	// The marker finds what the server started that left its process
	// group (setsid), once the server has ended.
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	marker := fmt.Sprintf("%s=%d-%d", sessionMarker, os.Getpid(), sessionSeq.Add(1))
	cmd.Env = append(cmd.Env, marker)
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = s.cfg.grace
	}
	c := &childProc{cmd: cmd, exited: make(chan struct{}), marker: marker}
	s.wg.Add(1)
	// Started and waited for on a thread kept for the child's life, which
	// its parent-death signal needs (see child.Start).
	err := child.Start(cmd, func() {
		defer s.wg.Done()
		err := cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.ex.Code = -1
		if st := cmd.ProcessState; st != nil {
			c.ex.Code = st.ExitCode()
			c.ex.Signal = exitSignal(st)
		}
		switch {
		case !c.closing:
			c.ex.How = ExitOnItsOwn
		case len(c.ex.Signals) > 0:
			c.ex.How = ExitForced
			if i := slices.Index(c.ex.Signals, c.ex.Signal); i >= 0 {
				// Killed by an earlier signal than the last sent: that one
				// ended it.
				c.ex.Signals = c.ex.Signals[:i+1]
			}
		default:
			c.ex.How = ExitAfterStdinClose
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			c.ex.Err = err
		}
		c.mu.Unlock()
		// Grandchildren in the process group must not outlive the server
		// (they would hold its stdout open).
		killGroup(cmd)
		close(c.exited)
		s.bump()
	})
	// The child has its own copies now; holding ours would hide its exit
	// (no EOF on stdout, no EPIPE on stdin).
	s.stdin.R.Close()
	s.stdout.W.Close()
	s.stderr.W.Close()
	if err != nil {
		s.wg.Done()
		return nil, fmt.Errorf("mcptest: starting %s: %w", cmd, err)
	}
	return c, nil
}

func (c *childProc) pid() int              { return c.cmd.Process.Pid }
func (c *childProc) done() <-chan struct{} { return c.exited }
func (c *childProc) stacks() string        { return "" }

func (c *childProc) exit() Exit {
	c.mu.Lock()
	defer c.mu.Unlock()
	ex := c.ex
	ex.Signals = append([]string(nil), ex.Signals...)
	ex.Escaped = append([]string(nil), ex.Escaped...)
	return ex
}

func (c *childProc) stop(grace time.Duration, closeStdin func()) error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	closeStdin()
	if c.wait(grace) {
		return nil
	}
	for _, sig := range escalation {
		c.mu.Lock()
		c.ex.Signals = append(c.ex.Signals, sig.name)
		c.mu.Unlock()
		signalGroup(c.cmd, sig)
		if c.wait(grace) {
			return nil
		}
	}
	c.mu.Lock()
	c.ex.How = ExitStuck
	c.mu.Unlock()
	return fmt.Errorf("mcptest: server process %d did not end %v after SIGKILL", c.pid(), grace)
}

func (c *childProc) wait(d time.Duration) bool { return bound.Wait(c.exited, d) }

func (c *childProc) endEscaped() []string {
	escaped := killEscaped(c.cmd, c.marker)
	c.mu.Lock()
	c.ex.Escaped = append(c.ex.Escaped, escaped...)
	c.mu.Unlock()
	return escaped
}

type inProc struct {
	s      *Session
	serve  ServeFunc
	cancel context.CancelFunc
	ended  chan struct{}

	mu      sync.Mutex
	closing bool
	stage   ExitHow // what Close has done so far
	ex      Exit
}

func startInProcess(s *Session, serve ServeFunc) *inProc {
	ctx, cancel := context.WithCancel(context.Background())
	p := &inProc{s: s, serve: serve, cancel: cancel, ended: make(chan struct{})}
	s.wg.Add(1)
	go p.run(ctx)
	return p
}

func (p *inProc) run(ctx context.Context) {
	defer p.s.wg.Done()
	err, panicked := p.serveRecovered(ctx)
	p.mu.Lock()
	switch {
	case panicked:
		p.ex.How = ExitPanicked
	case p.closing:
		p.ex.How = p.stage
	default:
		p.ex.How = ExitOnItsOwn
	}
	p.ex.Code = -1
	p.ex.Err = err
	p.mu.Unlock()
	// The server's ends close when it returns, as a process's would when
	// it exits: the host sees EOF on stdout and stderr.
	p.s.stdout.W.Close()
	p.s.stderr.W.Close()
	p.s.stdin.R.Close()
	p.cancel()
	close(p.ended)
	lingering.drop(p)
	p.s.bump()
}

// serveRecovered runs the ServeFunc, recovering a panic so that the test
// binary goes on: the panic becomes the server's exit.
func (p *inProc) serveRecovered(ctx context.Context) (err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			err, panicked = fmt.Errorf("the in-process server panicked: %v\n%s", v, debug.Stack()), true
		}
	}()
	return p.serve(ctx, p.s.stdin.R, p.s.stdout.W, p.s.stderr.W), false
}

func (p *inProc) pid() int              { return 0 }
func (p *inProc) endEscaped() []string  { return nil }
func (p *inProc) done() <-chan struct{} { return p.ended }

func (p *inProc) exit() Exit {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ex
}

func (p *inProc) setStage(stage ExitHow) {
	p.mu.Lock()
	p.closing = true
	p.stage = stage
	p.mu.Unlock()
}

func (p *inProc) stop(grace time.Duration, closeStdin func()) error {
	p.setStage(ExitAfterStdinClose)
	closeStdin()
	p.cancel()
	if bound.Wait(p.ended, grace) {
		return nil
	}
	// Closing the files wakes any Read or Write blocked on them.
	p.setStage(ExitForced)
	p.mu.Lock()
	p.ex.Signals = append(p.ex.Signals, "close pipes")
	p.mu.Unlock()
	p.s.stdin.R.Close()
	p.s.stdout.W.Close()
	p.s.stderr.W.Close()
	if bound.Wait(p.ended, grace) {
		return nil
	}
	p.mu.Lock()
	p.stage, p.ex.How = ExitStuck, ExitStuck // also if it returns later
	p.mu.Unlock()
	lingering.add(p)
	return fmt.Errorf("mcptest: in-process server did not return %v after its context ended and its pipes closed (still working, or stuck; mcptest.Main waits for it before looking for leaks); its goroutines:\n%s", 2*grace, p.stacks())
}

// lingering holds the in-process servers a Close gave up on until they
// return: a server still working (a race-built decoder on a large request)
// ends later on its own, and Main waits for it, bounded, before goleak
// looks for leaked goroutines.
var lingering lingerSet

type lingerSet struct {
	mu      sync.Mutex
	servers map[*inProc]bool
	changed chan struct{} // closed and replaced when a server leaves
}

func (l *lingerSet) add(p *inProc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if isClosed(p.ended) {
		return
	}
	if l.servers == nil {
		l.servers, l.changed = map[*inProc]bool{}, make(chan struct{})
	}
	l.servers[p] = true
}

func (l *lingerSet) drop(p *inProc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.servers[p] {
		delete(l.servers, p)
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// waiting reports whether a server lingers.
func (l *lingerSet) waiting() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.servers) > 0
}

// wait waits up to d for every lingering server to return, and names those
// that have not.
func (l *lingerSet) wait(d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		l.mu.Lock()
		var names []string
		for p := range l.servers {
			names = append(names, "in-process server "+funcName(p.serve))
		}
		changed := l.changed
		l.mu.Unlock()
		if len(names) == 0 || !bound.Wait(changed, time.Until(deadline)) {
			slices.Sort(names)
			return names
		}
	}
}

// stacks returns the goroutines that run the ServeFunc or were started by
// the session, or all goroutines if none can be told apart.
func (p *inProc) stacks() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	name := funcName(p.serve)
	var keep []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if (name != "" && bytes.Contains(g, []byte(name))) || bytes.Contains(g, []byte("mcptest.(*inProc).run")) {
			keep = append(keep, string(g))
		}
	}
	out := strings.Join(keep, "\n\n")
	if out == "" {
		out = string(buf)
	}
	const maxStacks = 64 << 10
	if len(out) > maxStacks {
		out = out[:maxStacks] + "\n[… truncated …]"
	}
	return out
}

func funcName(f any) string {
	v := reflect.ValueOf(f)
	if v.Kind() != reflect.Func || v.IsNil() {
		return ""
	}
	if fn := runtime.FuncForPC(v.Pointer()); fn != nil {
		return fn.Name()
	}
	return ""
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
