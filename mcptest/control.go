package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// WriteStdin writes b to the server's stdin as it is, bypassing framing and
// encoding: for feeding a server invalid JSON, an oversized line or any other
// bytes a well-behaved host would never send. The write is bounded by ctx and
// the session timeout; a server that stops reading stdin makes it fail with
// an error that says so.
func (s *Session) WriteStdin(ctx context.Context, b []byte) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	dl, _ := ctx.Deadline()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	_ = s.stdin.W.SetWriteDeadline(dl)
	n, err := s.stdin.W.Write(b)
	s.mu.Lock()
	s.stats.StdinBytes += int64(n)
	frame := b
	if len(frame) > 0 && frame[len(frame)-1] == '\n' {
		frame = frame[:len(frame)-1]
	}
	s.recordLocked("→", int64(len(frame)), frame)
	s.mu.Unlock()
	if err == nil {
		return nil
	}
	what := fmt.Sprintf("%d raw bytes (%d written)", len(b), n)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return s.waitError("writing "+what+" to server stdin",
			fmt.Errorf("the server stopped reading stdin: %s: %w", s.stdinFill(), context.DeadlineExceeded))
	case errors.Is(err, syscall.EPIPE):
		return s.waitError("writing "+what+" to server stdin", fmt.Errorf("the server closed its stdin (exited?): %w", err))
	case errors.Is(err, os.ErrClosed):
		return fmt.Errorf("mcptest: writing %s: %w", what, ErrClosed)
	}
	return fmt.Errorf("mcptest: writing %s to server stdin: %w", what, err)
}

// CloseStdin closes the server's stdin, the graceful shutdown signal of the
// stdio transport. Later writes fail; the stdout reader goes on, so whatever
// the server writes while it shuts down is still read. Use WaitExit to see
// whether the server ends.
func (s *Session) CloseStdin() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.note("host closed server stdin")
	if err := s.stdin.W.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("mcptest: closing server stdin: %w", err)
	}
	return nil
}

// Signal sends sig to a child-process server (the process itself, not its
// process group). For an in-process server it returns an error wrapping
// errors.ErrUnsupported.
func (s *Session) Signal(sig os.Signal) error {
	c, ok := s.proc.(*childProc)
	if !ok {
		return fmt.Errorf("mcptest: Signal(%v) to %s: %w", sig, s.target, errors.ErrUnsupported)
	}
	s.note("host sent %v", sig)
	if err := c.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("mcptest: Signal(%v): %w", sig, err)
	}
	return nil
}

// WaitExit waits until the server has ended, bounded by ctx and the session
// timeout, and returns how it ended. On timeout the error is a *WaitError
// with a diagnosis; the server is left running (Close ends it).
func (s *Session) WaitExit(ctx context.Context) (Exit, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	select {
	case <-s.proc.done():
		return s.proc.exit(), nil
	case <-ctx.Done():
		return Exit{}, s.waitError("waiting for the server to exit", ctx.Err())
	}
}
