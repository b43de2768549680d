package fakeserver

import "github.com/mcpstdio/mcpstdio/wire"

// idleNotifyFrame is the size of one Faults.IdleNotifyBytes frame.
const idleNotifyFrame = 16 << 10

// idleNotifications carries out Faults.IdleNotifyBytes after w's response,
// once, for the first tools/call; s.wmu must be held.
func (s *Server) idleNotifications(w *work) {
	if s.cfg.faults.IdleNotifyBytes <= 0 || w.method != wire.MethodToolsCall {
		return
	}
	s.mu.Lock()
	first := !s.idleStarted
	s.idleStarted = true
	s.mu.Unlock()
	if !first {
		return
	}
	for left := s.cfg.faults.IdleNotifyBytes; left > 0; {
		// Each line is a whole notifications/message; the last is at
		// least the envelope's size.
		line := append(oversizedFrame(int(min(left, idleNotifyFrame))-1), '\n')
		n, err := s.out.write(line)
		s.update(func(r *Report) { r.IdleNotifyBytes += int64(n) })
		if err != nil {
			s.logf("idle notifications: %v", err)
			return
		}
		left -= int64(len(line))
	}
	s.update(func(r *Report) { r.IdleNotifyDone = true })
	s.logf("idle notifications: %d bytes written", s.cfg.faults.IdleNotifyBytes)
}
