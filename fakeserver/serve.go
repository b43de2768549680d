package fakeserver

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Serve runs the server on stdin and stdout until stdin reaches EOF (see
// Faults.IgnoreEOF), ctx is cancelled, or a fault ends it. Diagnostics go to
// stderr, which may be nil. Before it returns it closes stdin and stdout and
// ends every goroutine, child and HTTP server it started.
//
// A write blocked on an unread stdout ends only when ctx is cancelled (Serve
// then closes stdout, which needs a concurrent Close, as *os.File has); a
// stdin whose Close does not interrupt a blocked Read (os.Stdin in blocking
// mode) keeps Serve waiting until that Read returns (ServeStdio avoids it).
//
// The read loop never waits on a stdout write: each request runs in its own
// goroutine with its own context, and frames are written under one write
// lock. A notifications/cancelled that arrives before the response write
// began cancels the work and suppresses the response; one that arrives
// after stops further work (a big response is closed early at the next
// chunk, still valid JSON) but cannot recall bytes already written. When
// stdin reaches EOF, all running work is cancelled as if by a cancel.
//
// Serve returns nil on EOF or cancellation, ErrExited when a fault made it
// exit, and an error if stdin or stdout is nil. A Server serves once; a
// second call returns an error.
func (s *Server) Serve(ctx context.Context, stdin io.ReadCloser, stdout io.WriteCloser, stderr io.Writer) error {
	if stdin == nil || stdout == nil {
		return errors.New("fakeserver: Serve needs a stdin and a stdout")
	}
	s.mu.Lock()
	if s.served {
		s.mu.Unlock()
		return errors.New("fakeserver: Serve called twice on one Server")
	}
	s.served = true
	s.mu.Unlock()
	if stderr == nil {
		stderr = io.Discard
	}
	outer := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.base = ctx
	s.stderr = stderr
	s.out = &outWriter{s: s, w: stdout}

	stopBackground := s.startBackground()
	if s.cfg.faults.Banner != "" {
		s.wmu.Lock()
		s.out.write([]byte(s.cfg.faults.Banner + "\n"))
		s.wmu.Unlock()
	}
	readDone := make(chan error, 1)
	go func() {
		// A panic that escapes the read loop ends the session with an
		// error, not the process.
		err := errors.New("fakeserver: the stdin read loop panicked (see Report.Panics)")
		defer func() { readDone <- err }()
		defer s.catch("the stdin read loop")
		err = s.readLoop(stdin)
	}()
	exit, readEnded := s.waitEnd(ctx, readDone)
	// Work that stdin's end cancels is answered with an error: JSON-RPC
	// wants an answer to every request (see Faults.DropPendingAtEOF).
	s.eofCancel.Store(exit == "stdin EOF")

	// Shut down: cancel all work, stop reading, wait for every goroutine.
	cancel()
	stdin.Close()
	if !readEnded {
		<-readDone
	}
	s.waitWork(outer)
	s.remote.close()
	s.out.close()
	s.update(func(r *Report) { r.Exit, s.logOff = exit, true })
	stopBackground()

	select {
	case <-s.exitCh:
		return s.exitErr
	default:
		return nil
	}
}

// startBackground writes the stderr noise and starts the stderr writer and
// the report file writer. The function it returns stops them and waits for
// them, the stderr writer's last bytes counted in the final report, then
// writes what the report file's last write had to say (sayReportLast).
func (s *Server) startBackground() (stop func()) {
	var bg sync.WaitGroup
	reportStop := make(chan struct{})
	if s.cfg.reportFile != "" {
		bg.Add(1)
		go func() {
			defer bg.Done()
			defer s.catch("the report file writer")
			s.reportFileLoop(reportStop)
		}()
	}
	s.writeNoise()
	logStop, logDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(logDone)
		defer s.catch("the stderr writer")
		s.logLoop(logStop)
	}()
	return func() {
		close(logStop)
		<-logDone
		close(reportStop)
		bg.Wait()
		s.sayReportLast()
	}
}

// waitEnd waits for the session to end: the read loop ending (then, with
// Faults.IgnoreEOF, for ctx or a fault's exit), ctx, or a fault's exit. It
// returns the exit reason for Report.Exit and whether the read loop ended.
func (s *Server) waitEnd(ctx context.Context, readDone <-chan error) (exit string, readEnded bool) {
	var readErr error
	select {
	case readErr = <-readDone:
		readEnded = true
	case <-ctx.Done():
		exit = "context cancelled"
	case <-s.exitCh:
	}
	if readEnded {
		eof := readErr == nil || errors.Is(readErr, io.EOF) || errors.Is(readErr, io.ErrUnexpectedEOF)
		if eof {
			s.update(func(r *Report) { r.EOF, r.EOFAt = true, time.Now() })
			exit = "stdin EOF"
			if readErr != nil && !errors.Is(readErr, io.EOF) {
				s.logf("stdin: %v", readErr)
			}
		} else {
			exit = "stdin: " + readErr.Error()
		}
		if s.cfg.faults.IgnoreEOF {
			select {
			case <-ctx.Done():
				exit = "context cancelled (stdin EOF ignored)"
			case <-s.exitCh:
			}
		}
	}
	select {
	case <-s.exitCh:
		exit = s.exitErr.Error()
	default:
	}
	return exit, readEnded
}

// waitWork waits for every work goroutine and fault writer. If outer ends
// first, a write is blocked on a stdout nobody reads: closing stdout is the
// only way to end it.
func (s *Server) waitWork(outer context.Context) {
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-outer.Done():
		s.out.close()
		<-done
	}
}

// exit ends Serve on purpose with err.
func (s *Server) exit(err error) {
	s.exitOnce.Do(func() {
		s.exitErr = err
		close(s.exitCh)
	})
}
