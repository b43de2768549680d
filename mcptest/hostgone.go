package mcptest

import (
	"errors"
	"fmt"
	"os"
)

// errHostClosedStdout ends a session whose host closed its end of the
// server's stdout.
var errHostClosedStdout = errors.New("mcptest: the host closed its end of the server's stdout (CloseStdout)")

// CloseStdout closes the host's end of the server's stdout, as a host that
// went away (exited, crashed) leaves it: the server's next write to stdout
// fails with EPIPE, or ends it by SIGPIPE if it writes to its file
// descriptor 1 without ignoring that signal. Nothing more is read from
// stdout, so pending and later requests fail with an error that says so.
// Stdin stays open (CloseStdin closes it); stderr is still drained, and
// WaitExit tells how the server ends. It returns once the stdout reader has
// stopped; after Close it returns an error wrapping ErrClosed.
func (s *Session) CloseStdout() error {
	s.mu.Lock()
	err := s.closedErrLocked("closing stdout")
	s.stdoutGone = err == nil
	s.mu.Unlock()
	if err != nil {
		return err
	}
	s.logf("host closed its end of the server's stdout")
	s.valve.Close()
	if err := s.stdout.R.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("mcptest: closing the host's end of stdout: %w", err)
	}
	// Closing the file interrupts a read blocked in it (the pipe is
	// pollable), and the valve makes a stalled read return.
	<-s.readerDone
	return nil
}
