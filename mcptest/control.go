package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Signal sends sig to a child-process server: the process itself, not its
// process group. For an in-process server it returns an error wrapping
// errors.ErrUnsupported; after Close, one wrapping ErrClosed.
func (s *Session) Signal(sig os.Signal) error {
	s.mu.Lock()
	err := s.closedErrLocked(fmt.Sprintf("Signal(%v)", sig))
	s.mu.Unlock()
	if err != nil {
		return err
	}
	c, ok := s.proc.(*childProc)
	if !ok {
		return fmt.Errorf("mcptest: Signal(%v) to %s: %w", sig, s.target, errors.ErrUnsupported)
	}
	s.logf("host sent %v", sig)
	if err := c.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("mcptest: Signal(%v): %w", sig, err)
	}
	return nil
}

// WaitExit waits until the server has ended, bounded by ctx and the session
// timeout, and returns how it ended. When the bound runs out first, the
// error is a *WaitError with a diagnosis and the server is left running
// (Close ends it). Once Close has begun it returns at once: how the server
// ended, or, if it has not, an error wrapping ErrClosed.
func (s *Session) WaitExit(ctx context.Context) (Exit, error) {
	if isClosed(s.proc.done()) {
		return s.proc.exit(), nil
	}
	s.mu.Lock()
	err := s.closedErrLocked("waiting for the server to exit")
	s.mu.Unlock()
	if err != nil {
		return s.proc.exit(), err
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	select {
	case <-s.proc.done():
		return s.proc.exit(), nil
	case <-ctx.Done():
		return Exit{}, s.waitError("waiting for the server to exit", ctx.Err())
	}
}
