package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// WriteStdin writes b to the server's stdin as it is, bypassing framing and
// encoding: for feeding a server invalid JSON, an oversized line or any other
// bytes a well-behaved host would never send. The write is bounded by ctx and
// the session timeout; a server that stops reading stdin makes it fail with
// an error that says so. As for every write, bytes a timed-out write could
// not deliver are written first by the next one.
func (s *Session) WriteStdin(ctx context.Context, b []byte) error {
	return s.writeRaw(ctx, fmt.Sprintf("%d raw bytes", len(b)), b)
}

// CloseStdin closes the server's stdin, the graceful shutdown signal of the
// stdio transport. Later writes fail; the stdout reader goes on, so whatever
// the server writes while it shuts down is still read. Use WaitExit to see
// whether the server ends.
func (s *Session) CloseStdin() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if n := len(s.stdinRest); n > 0 {
		s.note("host closed server stdin with %d bytes of a partly written message unsent: the server got a truncated line", n)
		s.stdinRest = nil
		s.stdinRestLen.Store(0)
	} else {
		s.note("host closed server stdin")
	}
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
