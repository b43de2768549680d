package fakeserver

import (
	"cmp"
	"context"
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/internal/pollable"
)

// ServeStdio runs a Server configured by command-line args (see ParseArgs)
// on the process's own stdin, stdout and stderr, until stdin reaches EOF,
// ctx is cancelled, the process gets SIGTERM, SIGINT or SIGHUP (ignored with
// -ignore-sigterm; each is recorded in Report.Signals), or a fault ends it. It is what
// `mcpstdio fake` runs, and what a test registers to run the fake as a
// helper child:
//
//	mcptest.RegisterHelper("fake", func(ctx context.Context, _ io.ReadCloser, _ io.WriteCloser, _ io.Writer) error {
//		return fakeserver.ServeStdio(ctx, mcptest.HelperArgs())
//	})
//
// (a helper child's stdio is the process's own). On Unix it switches stdin
// and stdout to non-blocking mode, so that a signal can end a read or write
// blocked on a pipe; nothing else in the process should use os.Stdin or
// os.Stdout meanwhile.
func ServeStdio(ctx context.Context, args []string) error {
	opts, err := ParseArgs(args)
	if err != nil {
		return err
	}
	s := New(opts...)
	s.stdio = true
	s.update(func(r *Report) { r.PID = os.Getpid() })
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.stdin = os.Stdin
	stop := s.catchSignals(cancel)
	defer stop()
	stdin := interruptible(os.Stdin)
	if d, ok := stdin.(dupFile); ok {
		// What the host wrote and the server never read is lost at this
		// Close: note it first.
		d.beforeClose = func() { s.noteUnread(os.Stdin) }
		stdin = d
	}
	return s.Serve(ctx, stdin, interruptible(os.Stdout), os.Stderr)
}

// dupFile is a pollable duplicate of a process's stdio file: Close closes
// both, so the other side sees EOF when Serve closes it, after calling
// beforeClose if set.
type dupFile struct {
	*os.File
	orig        *os.File
	beforeClose func()
}

func (d dupFile) Close() error {
	if d.beforeClose != nil {
		d.beforeClose()
	}
	return cmp.Or(d.File.Close(), d.orig.Close())
}

// interruptible returns a file on the same descriptor that a concurrent
// Close can interrupt, where the platform allows it, or f itself.
func interruptible(f *os.File) io.ReadWriteCloser {
	if nf := pollable.Dup(f); nf != nil {
		return dupFile{File: nf, orig: f}
	}
	return f
}
