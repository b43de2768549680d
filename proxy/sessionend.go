package proxy

// The end of a session, for the faults: a fault holds the server no longer
// than the session lasts, so that the proxy always ends and never keeps the
// server from ending.
//
// The session ends when the server exits (watch bounds what follows), or
// when the host ends it: it closes the proxy's stdin (seen by reading it,
// or, while the proxy is not reading it, by the pipe's hangup on Unix) or
// has a signal passed on that ends a process (Signal). Once the host has
// ended it and the server has not exited within ExitGrace, every fault lets
// go of the server, and each says so in the record: a stop reads again (a
// stop "until the end" ends there), a pacing fault forwards at full speed,
// a sigstop continues the server. Meanwhile the faults hold as configured,
// so that a server that exits on its stdin's end while its output is held
// is seen doing so. A host that closes its end of the proxy's stdout or
// stderr (Unix) ends at once a stop or pacing fault of that direction: no
// one will read what they hold, and the server finds the stream closed, as
// it would without the proxy.

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// holds reports whether a fault of the set can hold the server: keep a
// direction from being read or forwarded, or stop the process.
func (s *faultSet) holds(dir string) bool {
	for _, f := range s.all {
		switch f.Kind {
		case "stop", "latency", "slice", "bandwidth", "sigstop":
			if dir == "" || f.Dir == dir {
				return true
			}
		}
	}
	return false
}

// letGo ends every hold of the faults, for the reason why.
func (s *faultSet) letGo(why string) {
	s.releaseWhy = why
	close(s.release)
}

// released reports whether the faults have let go, and why.
func (s *faultSet) released() (string, bool) {
	select {
	case <-s.release:
		return s.releaseWhy, true
	default:
		return "", false
	}
}

// endSession notes that the host ended the session at t, for why (as in
// "the host closed the proxy's stdin"); the first call counts.
func (p *Proxy) endSession(t time.Time, why string) {
	p.endingOnce.Do(func() {
		p.endingAt, p.endingWhy = t, why
		close(p.ending)
	})
}

// endsSession reports whether passing sig on ends the session: it asks the
// server to end.
func endsSession(sig os.Signal) bool {
	return sig == os.Interrupt || sig == os.Kill || sig == syscall.SIGTERM || sig == syscall.SIGHUP
}

// releaseFaults lets go of the server ExitGrace after the host ended the
// session, unless the server exited first.
func (p *Proxy) releaseFaults() {
	defer p.wg.Done()
	select {
	case <-p.ending:
	case <-p.exited:
		return
	case <-p.stop:
		return
	}
	if !sleepUnless(time.Until(p.endingAt.Add(p.cfg.ExitGrace)), p.stop, p.exited) {
		return
	}
	p.faults.letGo(fmt.Sprintf("%s %v ago and the server still runs", p.endingWhy, p.cfg.ExitGrace))
}

// watchHost starts watching the host's streams for their far ends going
// away, where a fault could otherwise hold the server past that: the
// proxy's stdin (the host ending the session) and the stdout or stderr a
// fault holds.
func (p *Proxy) watchHost() {
	p.hangMu.Lock()
	defer p.hangMu.Unlock()
	p.hang[dIn] = watchHangup(p.host.Stdin, true, func() { p.endSession(time.Now(), "the host closed the proxy's stdin") })
	for _, d := range []dirIndex{dOut, dErr} {
		if p.faults.holds(dirNames[d]) {
			fw := p.fw[d]
			p.hang[d] = watchHangup(fw.dst, false, func() { close(fw.hostGone) })
		}
	}
}

// unwatch stops watching the host's stream of direction d, before the
// proxy closes it.
func (p *Proxy) unwatch(d dirIndex) {
	p.hangMu.Lock()
	h := p.hang[d]
	p.hang[d] = nil
	p.hangMu.Unlock()
	h.stop()
}
