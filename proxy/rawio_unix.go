//go:build unix

package proxy

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// rawFile reads or writes a non-blocking pipe (or other file) with
// read(2) and write(2), and waits for it in poll(2) in the calling
// goroutine's own thread, instead of parking the goroutine in the Go
// runtime's network poller: the kernel then wakes the waiting thread
// directly when the pipe is ready. Measured against the runtime's poller
// when it came in, it moved the proxy from below to above an io.Copy relay
// in raw throughput; docs/benchmarks.md has the proxy's numbers today and
// what this costs (a poll(2) before each read). A second pipe, written by
// stop, wakes the wait to end it.
type rawFile struct {
	f    *os.File // kept alive while fd is used
	fd   int
	name string
	wake [2]int

	stopped atomic.Bool
	mu      sync.Mutex // guards wake against stop after close
	closed  bool
	drained bool // the last read was short: the file is likely empty
}

// newRawFile returns a rawFile for stream s, or nil if s is not a file in
// non-blocking mode (a blocking file must be waited for by a blocking
// read, which nothing could interrupt).
func newRawFile(s any) *rawFile {
	f := fileOf(s)
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	fd := -1
	if rc.Control(func(u uintptr) { fd = int(u) }) != nil || fd < 0 {
		return nil
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_NONBLOCK == 0 {
		return nil
	}
	r := &rawFile{f: f, fd: fd, name: f.Name()}
	if err := unix.Pipe(r.wake[:]); err != nil {
		return nil
	}
	for _, w := range r.wake {
		unix.CloseOnExec(w)
		_ = unix.SetNonblock(w, true)
	}
	return r
}

var errInterrupted = errors.New("interrupted by the proxy")

// Read reads once, waiting in poll(2) while the file has nothing. After a
// short read it waits first: the read would most likely find nothing, and
// a system call per message is what a small round trip costs.
func (r *rawFile) Read(p []byte) (int, error) {
	defer runtime.KeepAlive(r.f)
	if r.drained {
		r.drained = false
		if err := r.wait(unix.POLLIN); err != nil {
			return 0, err
		}
	}
	for {
		n, err := unix.Read(r.fd, p)
		switch {
		case err == nil && n == 0 && len(p) > 0:
			return 0, io.EOF
		case err == nil:
			r.drained = n < len(p)
			return n, nil
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := r.wait(unix.POLLIN); err != nil {
				return 0, err
			}
		default:
			return 0, &os.PathError{Op: "read", Path: r.name, Err: err}
		}
	}
}

// Write writes all of p, waiting in poll(2) while the file is full.
func (r *rawFile) Write(p []byte) (int, error) {
	defer runtime.KeepAlive(r.f)
	done := 0
	for done < len(p) {
		n, err := unix.Write(r.fd, p[done:])
		switch {
		case err == nil:
			done += n
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := r.wait(unix.POLLOUT); err != nil {
				return done, err
			}
		default:
			return done, &os.PathError{Op: "write", Path: r.name, Err: err}
		}
	}
	return done, nil
}

// wait blocks in poll(2) until the file is ready for ev (or failed, which
// the next read or write reports) or stop is called.
func (r *rawFile) wait(ev int16) error {
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: ev}, {Fd: int32(r.wake[0]), Events: unix.POLLIN}}
	for {
		if r.stopped.Load() {
			return &os.PathError{Op: "poll", Path: r.name, Err: errInterrupted}
		}
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "poll", Path: r.name, Err: err}
		}
		if fds[1].Revents != 0 {
			continue // stopped: reported above
		}
		return nil
	}
}

// stop makes a wait in progress, and every later one, fail.
func (r *rawFile) stop() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || !r.stopped.CompareAndSwap(false, true) {
		return
	}
	_, _ = unix.Write(r.wake[1], []byte{1})
}

// release closes the wake pipe once no one waits any more; the file itself
// belongs to the caller.
func (r *rawFile) release() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true
	unix.Close(r.wake[0])
	unix.Close(r.wake[1])
}
