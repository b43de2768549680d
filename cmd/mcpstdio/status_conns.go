package main

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// maxHTTPConns is how many connections the live page keeps open at once.
// Another local user can open connections without the token; each costs a
// descriptor until the server closes it.
const maxHTTPConns = 64

// connLimit is a listener that keeps at most max connections open. When a
// connection arrives with max open, the one that has waited longest
// without a request in progress (a new one that has sent no request yet,
// or an idle keep-alive one) is closed to make room; when every one is
// serving a request, the new one is closed instead. So idle connections,
// however many, never keep a request from being served, and the
// descriptors stay bounded.
type connLimit struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connState
}

type connState struct {
	active bool      // serving a request
	since  time.Time // when it became new or idle
}

func newConnLimit(ln net.Listener, max int) *connLimit {
	return &connLimit{Listener: ln, max: max, conns: map[net.Conn]*connState{}}
}

// Accept returns the next connection, making room for it as the type says.
func (l *connLimit) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		var victim net.Conn
		if len(l.conns) >= l.max {
			victim = c
			var oldest time.Time
			for o, s := range l.conns {
				if !s.active && (victim == c || s.since.Before(oldest)) {
					victim, oldest = o, s.since
				}
			}
			delete(l.conns, victim)
		}
		if victim != c {
			l.conns[c] = &connState{since: time.Now()}
		}
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
		}
		if victim != c {
			return c, nil
		}
	}
}

// track is the server's ConnState hook: it keeps each connection's state.
func (l *connLimit) track(c net.Conn, st http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.conns[c]
	switch {
	case st == http.StateClosed || st == http.StateHijacked:
		delete(l.conns, c)
	case s == nil: // closed to make room already
	case st == http.StateActive:
		s.active = true
	case st == http.StateIdle:
		s.active, s.since = false, time.Now()
	}
}
