package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
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

// Defaults of Config.
const (
	DefaultChunkSize      = 64 << 10
	DefaultHeadBytes      = 256
	DefaultParseLimit     = 64 << 10
	DefaultObserverBuffer = 4 << 20
	DefaultMaxPending     = 4096
	DefaultStuck          = time.Second
	DefaultUnanswered     = 10 * time.Second
	DefaultExitGrace      = 2 * time.Second
	DefaultBlockEvent     = 100 * time.Millisecond
	DefaultStatusInterval = time.Second
)

// Config configures a proxy. The zero value is a faithful proxy that
// records nothing.
type Config struct {
	// ChunkSize is the most bytes each direction reads at once and holds
	// while writing them on: the proxy's own buffering per direction
	// (default DefaultChunkSize).
	ChunkSize int
	// PipeCapacity, if positive, sets the capacity of the kernel pipes to
	// the server's stdin, stdout and stderr (Linux F_SETPIPE_SZ; the kernel
	// rounds up to a power-of-two number of pages). Elsewhere Start fails
	// with an error wrapping errors.ErrUnsupported.
	PipeCapacity int

	// Record receives the record, one Write per event line (see record.Event); a
	// *LogFile rotates and keeps the file private. Nil records nothing.
	Record io.Writer
	// LogBodies makes chunk events carry the chunk's bytes (after
	// redaction), so that a replay has every byte; otherwise frames are kept
	// as head, length and hash.
	LogBodies bool
	// HeadBytes is how much of each frame a frame event keeps (default
	// DefaultHeadBytes); negative keeps none.
	HeadBytes int
	// ParseLimit: frames up to this many bytes are parsed in full (tool
	// name, progress token, error code); longer ones are only scanned for
	// their top-level id and method, in constant memory (default
	// DefaultParseLimit).
	ParseLimit int
	// Redact lists JSON paths from the message root whose values are
	// replaced by "[redacted]" before anything is recorded, such as
	// "params.arguments.query"; "*" matches any one key or array index.
	Redact []string
	// RedactKeys: a value whose object key contains one of these words
	// (ASCII case-insensitive) is redacted too. Nil means
	// DefaultRedactKeys; an empty non-nil slice turns this off.
	RedactKeys []string

	// Faults are injected in the order given; each is recorded when it
	// fires. See record.Fault.
	Faults []record.Fault

	// Stuck is how long a write must be blocked before a verdict calls the
	// destination "not reading" (default DefaultStuck).
	Stuck time.Duration
	// Unanswered is how long a request may wait for its response before a
	// verdict names it (default DefaultUnanswered).
	Unanswered time.Duration
	// BlockEvent is how long a write must be in progress before the record
	// gets a block event for it (default DefaultBlockEvent); the write's
	// exact duration is in its chunk event anyway.
	BlockEvent time.Duration
	// ExitGrace is how long the proxy waits, after the server exited, for
	// its stdout and stderr to end (a process it started may still hold
	// them) before it closes them (default DefaultExitGrace).
	ExitGrace time.Duration

	// StatusFile, if set, is rewritten atomically every StatusInterval
	// (default DefaultStatusInterval) with the live Status as JSON, and
	// removed when the proxy ends.
	StatusFile     string
	StatusInterval time.Duration

	// ObserverBuffer is the most bytes per direction of copies waiting for
	// the observer, allocated only as the observer falls behind; when it is
	// full, the observer loses detail (recorded), never traffic (default
	// DefaultObserverBuffer).
	ObserverBuffer int
	// MaxPending bounds the pending-request table; beyond it the oldest
	// entry is forgotten and counted (default DefaultMaxPending).
	MaxPending int

	// Version is the proxy's version, for the record header.
	Version string
	// LogPath is the record's file name, for Status (informational).
	LogPath string
}

// Check reports a configuration Start would refuse: a malformed redaction
// path or fault.
func (c Config) Check() error {
	if _, err := newRedactPolicy(nil, c.Redact); err != nil {
		return err
	}
	_, err := newFaultSet(c.Faults)
	return err
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.ChunkSize, DefaultChunkSize)
	if c.HeadBytes == 0 {
		c.HeadBytes = DefaultHeadBytes
	}
	c.HeadBytes = max(c.HeadBytes, 0)
	def(&c.ParseLimit, DefaultParseLimit)
	def(&c.ObserverBuffer, DefaultObserverBuffer)
	def(&c.MaxPending, DefaultMaxPending)
	defD(&c.Stuck, DefaultStuck)
	defD(&c.Unanswered, DefaultUnanswered)
	defD(&c.BlockEvent, DefaultBlockEvent)
	defD(&c.ExitGrace, DefaultExitGrace)
	defD(&c.StatusInterval, DefaultStatusInterval)
	if c.RedactKeys == nil {
		c.RedactKeys = DefaultRedactKeys
	}
	return c
}

// Streams are the host's side of the proxy: what the host writes to the
// server (Stdin) and where the server's output goes (Stdout, Stderr). In a
// process they are os.Stdin, os.Stdout and os.Stderr.
//
// If a stream implements io.Closer, the proxy closes it to pass an end on:
// Stdout and Stderr when the server closes its own, Stdin when the server
// closes its stdin or the proxy ends (Wait). If it has SetReadDeadline or SetWriteDeadline (an
// *os.File on a pipe, in non-blocking mode), the proxy uses them to end a
// blocked read or write when it stops; otherwise a read of Stdin that never
// returns keeps one goroutine until it does (see Proxy.Wait).
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Proxy is a running proxy between a host's streams and a server process.
type Proxy struct {
	cfg   Config
	cmd   *exec.Cmd
	host  Streams
	start time.Time
	rec   *recorder

	pipes [3]*pipes.Pipe // server stdin, stdout, stderr
	fw    [3]*forwarder
	obs   *observer

	faults *faultSet

	stop     chan struct{} // closed when the proxy must end now
	stopOnce sync.Once
	exited   chan struct{} // closed when the server has exited
	done     chan struct{} // closed when Wait's work is finished
	wg       sync.WaitGroup

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
		cfg: cfg, cmd: cmd, host: host, start: time.Now(), faults: fs,
		stop: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{}),
	}
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
		p.rec.emit(time.Now(), record.Event{Ev: record.EvError, Err: err.Error(), Text: "the server did not start"})
		p.closePipes()
		return nil, fmt.Errorf("proxy: starting %s: %w", cmd, err)
	}
	p.rec.emit(time.Now(), record.Event{Ev: record.EvSpawn, PID: cmd.Process.Pid})

	p.obs = newObserver(p, pol)
	p.fw[dIn] = newForwarder(p, dIn, host.Stdin, p.pipes[dIn].W)
	p.fw[dOut] = newForwarder(p, dOut, p.pipes[dOut].R, host.Stdout)
	p.fw[dErr] = newForwarder(p, dErr, p.pipes[dErr].R, host.Stderr)
	for _, f := range p.fw {
		p.obs.attach(f)
	}
	p.faults.arm(p)

	p.wg.Add(3) // the observer, waitServer and watch; the forwarders have done channels
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
		V: record.SchemaVersion, Schema: record.SchemaName, Start: p.start, Proxy: p.cfg.Version,
		Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, PID: os.Getpid(),
		Argv: slices.Clone(p.cmd.Args), Dir: p.cmd.Dir, Cwd: cwd, EnvKeys: envNames(p.cmd.Env),
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
	p.rec.emit(p.start, record.Event{Ev: record.EvHeader, Header: h})
}

// envNames returns the names of the variables in env (os.Environ() if env
// is nil), sorted: never their values.
func envNames(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	names := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if k != "" {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// pipeCapacity returns the kernel capacity of the pipe behind s, if s is an
// *os.File on a pipe and the system reports it; else 0.
func pipeCapacity(s any) int {
	f := fileOf(s)
	if f == nil {
		return 0
	}
	return (&pipes.Pipe{R: f}).Capacity()
}

// pipeBuffered returns the unread bytes in the pipe behind s, and whether
// the system reports it (Linux FIONREAD works on either end of a pipe).
func pipeBuffered(s any) (int, bool) {
	f := fileOf(s)
	if f == nil {
		return 0, false
	}
	n, err := (&pipes.Pipe{R: f}).Buffered()
	return n, err == nil
}

// fileOf returns the *os.File behind a stream, if there is one.
func fileOf(s any) *os.File {
	switch v := s.(type) {
	case *os.File:
		return v
	case interface{ File() *os.File }:
		return v.File()
	}
	return nil
}

func (p *Proxy) closePipes() {
	for _, pp := range p.pipes {
		if pp != nil {
			pp.Close()
		}
	}
}

// waitServer waits for the server process and notes how it ended.
func (p *Proxy) waitServer() {
	defer p.wg.Done()
	err := p.cmd.Wait()
	now := time.Now()
	info := exitInfo(p.cmd.ProcessState, err)
	p.mu.Lock()
	p.exitInfo = info
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		p.waitErr = err
	}
	p.mu.Unlock()
	ev := record.Event{Ev: record.EvExit, Signal: info.Signal, Status: info.Text}
	if info.Code >= 0 {
		code := info.Code
		ev.Exit = &code
	}
	if p.waitErr != nil {
		ev.Err = p.waitErr.Error()
	}
	p.rec.emit(now, ev)
	p.obs.noteExit(now, info)
	close(p.exited)
}

// watch ends the proxy when ctx ends, and bounds the wait for the server's
// output after it exited.
func (p *Proxy) watch(ctx context.Context) {
	defer p.wg.Done()
	select {
	case <-ctx.Done():
		p.rec.emit(time.Now(), record.Event{Ev: record.EvClose, Text: "the proxy's context ended: killing the server and closing every pipe", Err: context.Cause(ctx).Error()})
		p.shutdown()
		return
	case <-p.stop:
		return
	case <-p.exited:
	}
	// The server has exited; its stdout and stderr end when the last
	// process holding them does.
	t := time.NewTimer(p.cfg.ExitGrace)
	defer t.Stop()
	outDone := p.fw[dOut].readDone
	errDone := p.fw[dErr].readDone
	for outDone != nil || errDone != nil {
		select {
		case <-outDone:
			outDone = nil
		case <-errDone:
			errDone = nil
		case <-ctx.Done():
			p.shutdown()
			return
		case <-p.stop:
			return
		case <-t.C:
			for d, ch := range map[dirIndex]<-chan struct{}{dOut: outDone, dErr: errDone} {
				if ch != nil {
					p.rec.emit(time.Now(), record.Event{Ev: record.EvClose, Dir: dirNames[d], Text: fmt.Sprintf("the server exited %v ago and its %s is still open (a process it started holds it): the proxy stops reading it", p.cfg.ExitGrace, streamNames[d])})
					p.fw[d].interruptRead()
				}
			}
			outDone, errDone = nil, nil
		}
	}
	// Nothing more can reach the server: stop waiting for the host's stdin.
	p.fw[dIn].interruptRead()
	select {
	case <-ctx.Done():
		p.shutdown()
	case <-p.stop:
	case <-p.fw[dOut].done:
		<-p.fw[dErr].done
	}
}

// shutdown ends everything now: the server is killed and blocked reads and
// writes are interrupted.
func (p *Proxy) shutdown() {
	p.stopOnce.Do(func() {
		close(p.stop)
		if p.cmd.Process != nil {
			select {
			case <-p.exited:
			default:
				_ = p.cmd.Process.Kill()
			}
		}
		for _, f := range p.fw {
			f.interrupt()
		}
	})
}

// Signal passes sig on to the server process (not its process group, as a
// host signals its server's pid) and records it. On Windows only
// os.Kill can be delivered; other signals are recorded as not passed.
func (p *Proxy) Signal(sig os.Signal) error {
	now := time.Now()
	err := signalServer(p.cmd.Process, sig)
	ev := record.Event{Ev: record.EvSignal, Signal: signalName(sig), Text: "passed on to the server"}
	if err != nil {
		ev.Text, ev.Err = "not passed on", err.Error()
	}
	p.rec.emit(now, ev)
	return err
}

// Status returns what the proxy sees now: the pending requests, each
// direction's state and the verdicts.
func (p *Proxy) Status() Status { return p.obs.status(time.Now()) }

// Wait waits until the server has exited and its output has been forwarded
// (or ExitGrace has passed since it exited), writes the summary to the
// record, and returns how the server ended and the verdicts. The error is
// set when the server could not be waited for or the record could not be
// written. Wait may be called more than once.
//
// Wait returns without the goroutine reading host Stdin if that read
// cannot be interrupted (Stdin without SetReadDeadline); it ends when the
// read returns.
func (p *Proxy) Wait() (*Result, error) {
	p.mu.Lock()
	if p.result != nil {
		r, err := p.result, p.waitErr
		p.mu.Unlock()
		return r, err
	}
	p.mu.Unlock()
	<-p.exited
	for _, d := range []dirIndex{dOut, dErr} {
		<-p.fw[d].done
	}
	// The host's stdin is read until it ends or is interrupted; wait for it
	// only if it could be interrupted.
	if p.fw[dIn].interruptible {
		<-p.fw[dIn].done
	}
	p.stopOnce.Do(func() { close(p.stop) })
	// The proxy is done, as the server is: the host's writes must fail
	// rather than wait for a reader that will never come.
	_ = closeStream(p.host.Stdin)
	res := p.obs.finish()
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	res.Exit = p.exitInfo
	p.result = res
	err := p.waitErr
	if rerr := p.rec.failed(); rerr != nil && err == nil {
		err = rerr
	}
	p.waitErr = err
	return res, err
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
