package proxy

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

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
	p.sigMu.Lock() // a signal or a close being passed on is noted before the exit it causes
	p.note(now, ev)
	p.sigMu.Unlock()
	p.obs.noteExit(now, info)
	close(p.exited)
}

// watch ends the proxy when ctx ends, and bounds the wait for the server's
// output after it exited: ExitGrace for it to end and be delivered, then
// every forwarder still blocked is interrupted, with the reason recorded;
// ExitGrace more for the interrupted ones to return, then Wait goes on
// without them (released).
func (p *Proxy) watch(ctx context.Context) {
	defer p.wg.Done()
	defer close(p.released)
	select {
	case <-ctx.Done():
		p.note(time.Now(), record.Event{Ev: record.EvClose, Text: "the proxy's context ended: killing the server and closing every pipe", Err: context.Cause(ctx).Error()})
		p.shutdown()
	case <-p.stop:
	case <-p.exited:
	}
	<-p.exited // the server ends: it exited, or shutdown killed it
	outputs := []<-chan struct{}{p.fw[dOut].done, p.fw[dErr].done}
	if !p.waitFor(ctx, p.cfg.ExitGrace, outputs...) {
		for _, d := range []dirIndex{dOut, dErr} {
			select {
			case <-p.fw[d].done:
			default:
				p.note(time.Now(), record.Event{Ev: record.EvClose, Dir: dirNames[d], Text: p.stuckOutput(d)})
				p.fw[d].interrupt()
			}
		}
	}
	// Nothing more can reach the server: stop waiting for the host's stdin.
	p.fw[dIn].interruptRead()
	if p.fw[dIn].interruptible {
		outputs = append(outputs, p.fw[dIn].done)
	}
	p.waitFor(ctx, p.cfg.ExitGrace, outputs...)
}

// waitFor waits at most d for every channel to be closed, and reports
// whether they were. ctx ending shuts the proxy down, and the wait goes on.
func (p *Proxy) waitFor(ctx context.Context, d time.Duration, chs ...<-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	for _, ch := range chs {
		for waiting := true; waiting; {
			select {
			case <-ch:
				waiting = false
			case <-ctx.Done():
				p.shutdown()
				ctx = context.Background()
			case <-t.C:
				return false
			}
		}
	}
	return true
}

// stuckOutput says why direction d has not ended ExitGrace after the
// server exited.
func (p *Proxy) stuckOutput(d dirIndex) string {
	fw := p.fw[d]
	ago := fmt.Sprintf("the server exited %v ago and ", p.cfg.ExitGrace)
	switch {
	case fw.stopped.Load() != 0:
		name := "stop"
		if n := fw.stopName.Load(); n != nil {
			name = *n
		}
		return ago + fmt.Sprintf("the proxy's own fault %s holds %s: the proxy ends it", name, srcNames[d])
	case fw.writeStart.Load() != 0:
		text := ago + fmt.Sprintf("the host is not reading its %s: a write of %d bytes to it is blocked", streamNames[d], fw.writeLen.Load())
		if n, ok := pipeBuffered(fw.src); ok && n > 0 {
			text += fmt.Sprintf(", %d bytes more wait in %s pipe", n, srcNames[d])
		}
		return text + ": the proxy stops writing them, and they are lost"
	}
	return ago + fmt.Sprintf("its %s is still open (a process it started holds it): the proxy stops reading it", streamNames[d])
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
// host signals its server's pid) and records it as a signal the proxy
// received: the caller passes on what was sent to it. On Windows only
// os.Kill can be delivered; other signals are recorded as not passed. A
// signal that ends a process (os.Interrupt, os.Kill, SIGTERM, SIGHUP),
// once passed on, ends the session: ExitGrace later, if the server still
// runs, the faults let go of it (see Config.Faults), so that a server a
// sigstop fault stopped can act on the signal.
func (p *Proxy) Signal(sig os.Signal) error {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	now := time.Now()
	err := signalServer(p.cmd.Process, sig)
	ev := record.Event{Ev: record.EvSignal, Signal: signalName(sig), Text: "received by the proxy (from the host, or whoever signalled it) and passed on to the server"}
	if err != nil {
		ev.Text, ev.Err = "not passed on", err.Error()
	}
	p.note(now, ev)
	if err == nil && endsSession(sig) {
		p.endSession(now, "the proxy passed on "+ev.Signal)
	}
	return err
}
