package mcptest

import (
	"bytes"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// drainStderr reads the server's stderr to its end into a bounded capture,
// so that a server that logs much never blocks on it, and tees it to the
// WithStderr writer on a goroutine of its own, dropping (and counting) what
// that writer cannot keep up with.
func (s *Session) drainStderr() {
	defer s.wg.Done()
	defer close(s.stderrDone)
	var tee chan []byte
	var teeDone chan struct{}
	if s.cfg.stderr != nil {
		tee = make(chan []byte, 256)
		teeDone = make(chan struct{})
		go func() {
			defer close(teeDone)
			for b := range tee {
				_, _ = s.cfg.stderr.Write(b)
			}
		}()
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := s.stderr.R.Read(buf)
		if n > 0 {
			s.stderrCap.Write(buf[:n])
			if tee != nil {
				select {
				case tee <- bytes.Clone(buf[:n]):
				default:
					s.mu.Lock()
					s.stats.StderrTeeDropped += int64(n)
					s.mu.Unlock()
				}
			}
		}
		if err != nil {
			break
		}
	}
	if tee != nil {
		close(tee)
		// The tee's writer is the caller's; wait for it within the grace
		// period only, so a stuck writer cannot hang Close.
		if !bound.Wait(teeDone, s.cfg.grace) {
			s.logf("stderr tee writer still blocked after %v; abandoned", s.cfg.grace)
		}
	}
}
