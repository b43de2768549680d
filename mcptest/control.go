package mcptest

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// Signal sends sig to a child-process server (not its group); an in-process
// server gives errors.ErrUnsupported.
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

// WaitExit waits until the server has ended and returns how, bounded by ctx
// and the session timeout (a *WaitError); after Close it returns at once.
func (s *Session) WaitExit(ctx context.Context) (Exit, error) {
	// A timed-out wait leaves the server running. After Close the error is
	// ErrClosed if Close could not end it.
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
