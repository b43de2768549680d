//go:build unix

package proxycmd

import (
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/pollable"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// passedSignals are the signals the proxy passes on to the server.
var passedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// ignoreSIGPIPE keeps a write to a closed stdout or stderr from killing the
// proxy: the write fails with EPIPE instead, and the proxy passes the
// failure back to the server. (signal.Notify, unlike signal.Ignore, is not
// inherited by the server.)
func ignoreSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}

// HostStreams returns the proxy's side of the host's pipes. When they are
// this process's own stdio files, it uses duplicates in non-blocking mode,
// which the Go runtime polls, so that a blocked read or write can be ended
// by a deadline. The mode belongs to the open file, which others may share
// (a terminal): restore, and closing a duplicate, put it back to blocking.
func HostStreams(stdin io.Reader, stdout, stderr io.Writer) (proxy.Streams, func()) {
	var dups []*dupFile
	wrap := func(s any) any {
		f, ok := s.(*os.File)
		if !ok {
			return s
		}
		d := pollable.Dup(f)
		if d == nil {
			return s
		}
		df := &dupFile{f: d, orig: f}
		dups = append(dups, df)
		return df
	}
	st := proxy.Streams{Stdin: wrap(stdin).(io.Reader), Stdout: wrap(stdout).(io.Writer), Stderr: wrap(stderr).(io.Writer)}
	return st, func() {
		for _, d := range dups {
			d.blocking()
		}
	}
}

// dupFile is a non-blocking duplicate of one of the process's stdio files.
// Close closes both, so that the other side sees the end.
type dupFile struct {
	f    *os.File
	orig *os.File
}

func (d *dupFile) Read(p []byte) (int, error)         { return d.f.Read(p) }
func (d *dupFile) Write(p []byte) (int, error)        { return d.f.Write(p) }
func (d *dupFile) SetReadDeadline(t time.Time) error  { return d.f.SetReadDeadline(t) }
func (d *dupFile) SetWriteDeadline(t time.Time) error { return d.f.SetWriteDeadline(t) }

// File returns the duplicate, for the proxy's pipe evidence.
func (d *dupFile) File() *os.File { return d.f }

func (d *dupFile) blocking() { pollable.Blocking(d.f) }

func (d *dupFile) Close() error {
	d.blocking()
	err := d.f.Close()
	if err2 := d.orig.Close(); err == nil {
		err = err2
	}
	return err
}
