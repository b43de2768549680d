package fakeserver

import (
	"fmt"
)

// logf sends a diagnostic line to stderr through a bounded queue, so that a
// host that does not drain stderr never blocks the read loop; lines that do
// not fit are dropped.
func (s *Server) logf(format string, args ...any) {
	line := "fakeserver: " + fmt.Sprintf(format, args...) + "\n"
	s.mu.Lock()
	off := s.logOff
	s.mu.Unlock()
	if off {
		return
	}
	select {
	case s.logCh <- line:
	default:
	}
}

func (s *Server) logLoop(stop <-chan struct{}) {
	for {
		select {
		case line := <-s.logCh:
			s.writeStderr([]byte(line))
		case <-stop:
			for {
				select {
				case line := <-s.logCh:
					s.writeStderr([]byte(line))
				default:
					return
				}
			}
		}
	}
}

func (s *Server) writeStderr(b []byte) {
	n, _ := s.stderr.Write(b)
	s.update(func(r *Report) { r.StderrBytes += int64(n) })
}

// writeNoise writes exactly cfg.stderrNoise bytes of numbered lines to stderr.
func (s *Server) writeNoise() {
	// Whole lines, batched into writes of up to 64 KiB: noisy servers
	// write lines, but a write per line would make this the slow part.
	left := s.cfg.faults.StderrNoise
	var buf []byte
	for i := 1; left > 0; {
		buf = buf[:0]
		for len(buf) < 64<<10 && int64(len(buf)) < left {
			buf = fmt.Appendf(buf, "fakeserver: stderr noise line %08d %s\n", i, "................................................")
			i++
		}
		if int64(len(buf)) > left {
			buf = buf[:left]
		}
		left -= int64(len(buf))
		s.writeStderr(buf)
	}
}
