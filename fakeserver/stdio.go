package fakeserver

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// ServeStdio runs a Server configured by command-line args (see ParseArgs)
// on the process's own stdin, stdout and stderr, until stdin reaches EOF,
// ctx is cancelled, the process gets SIGTERM or an interrupt (SIGTERM is
// ignored with -ignore-sigterm), or a fault ends it. It is what
// `mcpstdio fake` and a child started through Register run.
//
// On Unix it switches stdin and stdout to non-blocking mode, so that a
// signal can end a read or write blocked on a pipe; nothing else in the
// process should use os.Stdin or os.Stdout meanwhile.
func ServeStdio(ctx context.Context, args []string) error {
	opts, err := ParseArgs(args)
	if err != nil {
		return err
	}
	return serveProcess(ctx, New(opts...), os.Stdin, os.Stdout, os.Stderr)
}

// serveProcess serves the process's stdio with the signal handling of a
// real server process.
func serveProcess(ctx context.Context, s *Server, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	if s.cfg.ignoreSIGTRM {
		signal.Ignore(syscall.SIGTERM)
	}
	sigs := []os.Signal{os.Interrupt}
	if !s.cfg.ignoreSIGTRM {
		sigs = append(sigs, syscall.SIGTERM)
	}
	ctx, stop := signal.NotifyContext(ctx, sigs...)
	defer stop()
	stdin, stdout = interruptible(stdin), interruptibleW(stdout)
	return s.Serve(ctx, stdin, stdout, stderr)
}

// dupFile is a pollable duplicate of a process's stdio file: Close closes
// both, so the other side sees EOF when Serve closes it.
type dupFile struct {
	*os.File
	orig *os.File
}

func (d dupFile) Close() error {
	err := d.File.Close()
	if err2 := d.orig.Close(); err == nil {
		err = err2
	}
	return err
}

// interruptible returns a reader on the same file that a concurrent Close
// can interrupt, where the platform allows it.
func interruptible(r io.ReadCloser) io.ReadCloser {
	if f, ok := r.(*os.File); ok {
		if nf := pollable(f); nf != nil {
			return dupFile{nf, f}
		}
	}
	return r
}

func interruptibleW(w io.WriteCloser) io.WriteCloser {
	if f, ok := w.(*os.File); ok {
		if nf := pollable(f); nf != nil {
			return dupFile{nf, f}
		}
	}
	return w
}
