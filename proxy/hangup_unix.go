//go:build unix

package proxy

import (
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// hangup watches one of the host's streams for its far end going away.
type hangup struct {
	wake [2]int // closing wake[1] ends the watch
	done chan struct{}
	once sync.Once
}

// watchHangup watches host stream s (an *os.File, or a stream with one
// behind it) and calls gone, once, from its own goroutine, when its far end
// goes away: with in, the host closed its end of the proxy's stdin (a
// pipe's last writer closed it: POLLHUP; a socket was shut down for
// writing: POLLRDHUP, Linux); otherwise the host closed its reading end of
// the proxy's stdout or stderr (POLLERR or POLLHUP). It polls a duplicate
// of the descriptor and never reads or writes it. It returns nil where s
// cannot be watched. The duplicate keeps s's file open: stop must be
// called before s is closed, and before the proxy ends.
func watchHangup(s any, in bool, gone func()) *hangup {
	f := fileOf(s)
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd, err = unix.FcntlInt(u, unix.F_DUPFD_CLOEXEC, 0) }) != nil || err != nil || fd < 0 {
		return nil
	}
	h := &hangup{done: make(chan struct{})}
	syscall.ForkLock.RLock() // no child inherits the pipe before it is close-on-exec
	err = unix.Pipe(h.wake[:])
	if err == nil {
		unix.CloseOnExec(h.wake[0])
		unix.CloseOnExec(h.wake[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		unix.Close(fd)
		return nil
	}
	var ev int16 // POLLERR and POLLHUP are always reported
	if in {
		ev = pollRDHUP
	}
	go func() {
		defer close(h.done)
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: ev}, {Fd: int32(h.wake[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil, fds[1].Revents != 0, fds[0].Revents&unix.POLLNVAL != 0:
				return
			case fds[0].Revents&(ev|unix.POLLHUP|unix.POLLERR) != 0:
				gone()
				return
			}
		}
	}()
	return h
}

// stop ends the watch and waits until its duplicate is closed. It is safe
// on nil and more than once.
func (h *hangup) stop() {
	if h == nil {
		return
	}
	h.once.Do(func() {
		unix.Close(h.wake[1])
		<-h.done
		unix.Close(h.wake[0])
	})
}
