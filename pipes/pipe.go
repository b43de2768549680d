package pipes

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// Pipe is a real kernel pipe: bytes written to W can be read from R, and a
// writer blocks once the kernel buffer is full. Both ends are *os.File, so
// they can be handed to a child process (exec.Cmd.Stdin/Stdout) or used in
// the same process with read and write deadlines.
type Pipe struct {
	// R is the read end.
	R *os.File
	// W is the write end.
	W *os.File

	closeOnce sync.Once
	closeErr  error
}

// New returns a new kernel pipe. The caller must Close it.
func New() (*Pipe, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipes: %w", err)
	}
	return &Pipe{R: r, W: w}, nil
}

// SetCapacity asks the kernel to make the pipe's buffer n bytes and returns
// the capacity it chose, which is at least n rounded up to a power-of-two
// number of pages (Linux F_SETPIPE_SZ). An unprivileged process cannot go
// above /proc/sys/fs/pipe-max-size. On systems other than Linux it returns
// an error wrapping errors.ErrUnsupported.
func (p *Pipe) SetCapacity(n int) (int, error) {
	if n <= 0 {
		return 0, fmt.Errorf("pipes: SetCapacity(%d): capacity must be positive", n)
	}
	return setCapacity(p.R, n)
}

// Capacity returns the size of the pipe's kernel buffer in bytes (Linux
// F_GETPIPE_SZ), or 0 where the system does not report it.
func (p *Pipe) Capacity() int {
	c, err := capacity(p.R)
	if err != nil {
		return 0
	}
	return c
}

// Buffered returns the number of bytes written to the pipe and not yet read
// (FIONREAD on the read end). It is a snapshot: a concurrent reader or writer
// may change it at once. Where the system does not report it, the error wraps
// errors.ErrUnsupported.
func (p *Pipe) Buffered() (int, error) {
	return buffered(p.R)
}

// Full reports whether the pipe is effectively full: Buffered is within one
// page of Capacity, or, for a pipe of a single page, equal to it.
//
// It is a tolerance, not an exact test. The kernel stores pipe data in
// page-sized slots, and many small writes leave slots partly empty, so a
// writer can be refused while Buffered is still below Capacity (seen on
// Linux: 62,336 of 65,536 bytes buffered and the writer blocked). With writes
// fragmented worse than that, Full can report false while a writer is
// blocked; it never reports true for a pipe that has a page of room or more.
// A pipe of one page has a single slot: there a page of tolerance would call
// any buffered byte full although small writes still merge into the slot, so
// Full asks for it to be entirely full, and can miss a writer blocked behind
// a partly filled slot. Where the capacity or fill level is unknown, the
// error wraps errors.ErrUnsupported.
func (p *Pipe) Full() (bool, error) {
	c, err := capacity(p.R)
	if err != nil {
		return false, err
	}
	b, err := buffered(p.R)
	if err != nil {
		return false, err
	}
	return EffectivelyFull(b, c), nil
}

// EffectivelyFull reports whether a pipe of capacity bytes holding buffered
// bytes is full within the tolerance [Pipe.Full] documents.
func EffectivelyFull(buffered, capacity int) bool {
	page := os.Getpagesize()
	if capacity <= page {
		return capacity > 0 && buffered >= capacity
	}
	return capacity-buffered < page
}

// Close closes both ends. It is safe to call more than once; later calls
// return the first call's result.
func (p *Pipe) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = errors.Join(closeIgnoringClosed(p.R), closeIgnoringClosed(p.W))
	})
	return p.closeErr
}

// closeIgnoringClosed closes f, treating an end that someone else already
// closed (for example after handing it to a child process) as success.
func closeIgnoringClosed(f *os.File) error {
	if err := f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	return nil
}
