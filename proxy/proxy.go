package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/pipes"
	"github.com/mcpstdio/mcpstdio/record"
)

// Proxy is a running proxy between a host's streams and a server process.
type Proxy struct {
	cfg        Config
	cmd        *exec.Cmd
	argv       []string // cmd.Args, secret-looking values redacted (argvHidden of them)
	argvHidden int
	host       Streams
	start      time.Time
	rec        *recorder

	pipes [3]*pipes.Pipe // server stdin, stdout, stderr
	fw    [3]*forwarder
	obs   *observer

	faults *faultSet
	fwd    int32 // forwarding, when the proxy started

	stop     chan struct{} // closed when the proxy must end now
	stopOnce sync.Once
	waitOnce sync.Once
	sigMu    sync.Mutex    // held while a signal is passed on, or an end passed on by a close, and noted: the exit they cause is noted after
	exited   chan struct{} // closed when the server has exited
	released chan struct{} // closed when Wait need not wait for the forwarders any longer
	wg       sync.WaitGroup

	// The host's end of the session (see sessionend.go).
	ending     chan struct{} // closed when the host ended the session
	endingOnce sync.Once
	endingAt   time.Time // set before ending is closed
	endingWhy  string
	hangMu     sync.Mutex
	hang       [3]*hangup // watches of the host's streams, nil where none

	mu       sync.Mutex
	exitInfo ExitInfo
	waitErr  error
	result   *Result
}

// ExitInfo says how the server ended.
type ExitInfo struct {
	Code   int    `json:"code"`             // exit code, -1 if killed by a signal or not ended
	Signal string `json:"signal,omitempty"` // the signal that killed it (Unix), e.g. "SIGTERM"
	Status int    `json:"status"`           // what the proxy exits with: Code, or 128+signal number
	Text   string `json:"text"`             // e.g. "exit status 1", "killed by SIGKILL"
}

// Result is what Wait returns: how the server ended, the last status and
// the verdicts.
type Result struct {
	Exit     ExitInfo
	Status   Status
	Verdicts []record.Verdict
}

// Start starts cmd with its stdin, stdout and stderr on new kernel pipes and
// forwards them to and from host until the server ends. cmd.Stdin, Stdout
// and Stderr must be nil. On Unix the server gets a process group of its
// own (so that a terminal's signals reach it once, through the proxy) and,
// on Linux, is killed if the proxy dies (Pdeathsig), unless cmd.SysProcAttr
// is already set.
//
// ctx ends the proxy early: the server is killed and every blocked read or
// write is interrupted where the streams allow it. The caller must call
// Wait.
func Start(ctx context.Context, cmd *exec.Cmd, host Streams, cfg Config) (*Proxy, error) {
	if cmd.Stdin != nil || cmd.Stdout != nil || cmd.Stderr != nil {
		return nil, errors.New("proxy: Start: cmd.Stdin, Stdout and Stderr must be nil; the proxy connects them")
	}
	if host.Stdin == nil || host.Stdout == nil || host.Stderr == nil {
		return nil, errors.New("proxy: Start: every host stream must be set")
	}
	cfg = cfg.withDefaults()
	pol, err := newRedactPolicy(cfg.RedactKeys, cfg.Redact)
	if err != nil {
		return nil, err
	}
	fs, err := newFaultSet(cfg.Faults)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		cfg: cfg, cmd: cmd, host: host, start: time.Now(), faults: fs, fwd: forwarding.Load(),
		stop: make(chan struct{}), exited: make(chan struct{}), released: make(chan struct{}), ending: make(chan struct{}),
	}
	p.argv, p.argvHidden = pol.redactArgv(cmd.Args)
	p.rec = &recorder{w: cfg.Record, start: p.start}
	if cfg.Record == nil {
		p.rec = nil
	}
	for i := range p.pipes {
		pp, err := pipes.New()
		if err != nil {
			p.closePipes()
			return nil, err
		}
		p.pipes[i] = pp
		if cfg.PipeCapacity > 0 {
			if _, err := pp.SetCapacity(cfg.PipeCapacity); err != nil {
				p.closePipes()
				return nil, fmt.Errorf("proxy: setting the server's pipe capacity: %w", err)
			}
		}
	}
	p.obs = newObserver(p, pol)
	p.writeHeader()

	cmd.Stdin, cmd.Stdout, cmd.Stderr = p.pipes[dIn].R, p.pipes[dOut].W, p.pipes[dErr].W
	if cmd.SysProcAttr == nil {
		setProcAttr(cmd)
	}
	err = cmd.Start()
	// The child has its own copies now; holding ours would hide its end
	// (no EOF on stdout, no EPIPE on stdin).
	p.pipes[dIn].R.Close()
	p.pipes[dOut].W.Close()
	p.pipes[dErr].W.Close()
	if err != nil {
		p.note(time.Now(), record.Event{Ev: record.EvError, Err: err.Error(), Text: "the server did not start"})
		p.obs.drain() // the observer never runs: write the header and this now
		p.closePipes()
		return nil, fmt.Errorf("proxy: starting %s: %w", strings.Join(p.argv, " "), err)
	}
	p.note(time.Now(), record.Event{Ev: record.EvSpawn, PID: cmd.Process.Pid})

	p.fw[dIn] = newForwarder(p, dIn, host.Stdin, p.pipes[dIn].W)
	p.fw[dOut] = newForwarder(p, dOut, p.pipes[dOut].R, host.Stdout)
	p.fw[dErr] = newForwarder(p, dErr, p.pipes[dErr].R, host.Stderr)
	for _, f := range p.fw {
		p.obs.attach(f)
	}
	p.faults.arm(p)
	if p.faults.holds("") {
		p.watchHost()
		p.wg.Add(1)
		go p.releaseFaults()
	}

	p.wg.Add(2) // waitServer and watch; the observer and the forwarders have done channels
	go p.obs.run()
	for _, f := range p.fw {
		go f.run()
	}
	go p.waitServer()
	go p.watch(ctx)
	return p, nil
}

// writeHeader writes the record's first event.
func (p *Proxy) writeHeader() {
	if p.rec == nil {
		return
	}
	cwd, _ := os.Getwd()
	h := &record.Header{
		V: record.SchemaVersion, Schema: record.SchemaName, Start: p.start, TimeUnit: record.TimeUnit, Proxy: p.cfg.Version,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, PID: os.Getpid(),
		Argv: slices.Clone(p.argv), ArgvRedacted: p.argvHidden, Dir: p.cmd.Dir, Cwd: cwd, EnvKeys: envNames(p.cmd.Env),
		Chunk: p.cfg.ChunkSize, Head: p.cfg.HeadBytes, Parse: p.cfg.ParseLimit, Bodies: p.cfg.LogBodies,
		Redact: slices.Clone(p.cfg.Redact), Keys: slices.Clone(p.cfg.RedactKeys), Faults: slices.Clone(p.cfg.Faults),
	}
	if h.Redact == nil {
		h.Redact = []string{}
	}
	h.Pipes = record.PipeSizes{
		ServerStdin: p.pipes[dIn].Capacity(), ServerStdout: p.pipes[dOut].Capacity(), ServerStderr: p.pipes[dErr].Capacity(),
		HostStdin: pipeCapacity(p.host.Stdin), HostStdout: pipeCapacity(p.host.Stdout), HostStderr: pipeCapacity(p.host.Stderr),
	}
	p.note(p.start, record.Event{Ev: record.EvHeader, Header: h})
}

func (p *Proxy) closePipes() {
	for _, pp := range p.pipes {
		if pp != nil {
			pp.Close()
		}
	}
}

// Status returns what the proxy sees now: the pending requests, each
// direction's state and the verdicts. It waits for the observer to finish
// the chunk it is working on (a chunk of many short lines can take a
// while on a loaded machine); Signal never waits for it.
func (p *Proxy) Status() Status { return p.obs.status(time.Now()) }

// Wait waits until the server has exited and its output has been forwarded,
// writes the summary to the record, and returns how the server ended and
// the verdicts. The error is set when the server could not be waited for
// or the record could not be written. Wait and Close may be called any
// number of times, from any goroutines: the first call does the work and
// every call returns its result.
//
// Wait always returns once the server has exited: its stdout and stderr
// get ExitGrace to end and be delivered; then the proxy interrupts every
// read and write still blocked (a host that does not read, a stop fault, a
// process the server started that holds its output), and says why in the
// record. The observer then gets at most ExitGrace more for its backlog
// (what it has not seen by then is counted as lost detail), so Wait
// returns within twice ExitGrace of the server's exit, plus scheduling. A
// stream that cannot be interrupted (no SetReadDeadline or
// SetWriteDeadline, not a non-blocking file) is given ExitGrace more, then
// left to its goroutine, which ends when its call returns. A Write of
// Config.Record or an OnStatus call that does not return (a hung file
// system) is left behind too: ExitGrace plus 2 s after the observer was
// asked to finish, Wait goes on without the record's summary, returning
// the exit but no verdicts and an error that says why; the observer's
// goroutine ends once that call returns.
func (p *Proxy) Wait() (*Result, error) {
	p.waitOnce.Do(p.wait)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.result, p.waitErr
}

// wait is Wait's work, done once.
func (p *Proxy) wait() {
	<-p.exited
	for _, d := range []dirIndex{dOut, dErr} {
		select {
		case <-p.fw[d].done:
		case <-p.released:
		}
	}
	// The host's stdin is read until it ends or is interrupted; wait for it
	// only if it could be interrupted.
	if p.fw[dIn].interruptible {
		select {
		case <-p.fw[dIn].done:
		case <-p.released:
		}
	}
	p.stopOnce.Do(func() { close(p.stop) })
	// The proxy is done, as the server is: the host's writes must fail
	// rather than wait for a reader that will never come.
	for d := range p.hang {
		p.unwatch(dirIndex(d))
	}
	_ = closeStream(p.host.Stdin)
	res, ferr := p.obs.finish()
	p.wg.Wait()
	if ferr == nil {
		<-p.obs.done
		for _, f := range p.fw {
			f.sp.closeRead() // the observer is done with it
		}
	} else {
		res = &Result{Status: Status{ProxyPID: os.Getpid(), ServerPID: p.cmd.Process.Pid, Argv: p.argv, Start: p.start, Updated: time.Now()}}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	res.Exit = p.exitInfo
	if ferr != nil {
		res.Status.Exit = &res.Exit
	}
	p.result = res
	if p.waitErr == nil {
		p.waitErr = ferr
	}
	if rerr := p.rec.failed(); rerr != nil && p.waitErr == nil {
		p.waitErr = rerr
	}
}

// Close ends the proxy now: it kills the server, interrupts every blocked
// read and write it can, and waits as Wait does. It is safe to call more
// than once and after Wait.
func (p *Proxy) Close() error {
	p.shutdown()
	_, err := p.Wait()
	return err
}

// Config returns the configuration in effect (with defaults filled in).
func (p *Proxy) Config() Config { return p.cfg }

// ServerPID returns the server's process id.
func (p *Proxy) ServerPID() int { return p.cmd.Process.Pid }
