//go:build unix

package fakeserver

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// caughtSignals are the signals ServeStdio records in Report.Signals.
var caughtSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT}

// catchSignals records each caught signal and ends the session by end,
// unless Faults.IgnoreSIGTERM ignores it; the report file is written at
// once. SIGQUIT is recorded and then raised again with its default action (a Go program
// dumps its goroutines and exits). stop stops catching.
func (s *Server) catchSignals(end context.CancelFunc) (stop func()) {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, caughtSignals...)
	if s.cfg.faults.IgnoreSIGTERM {
		// A host that closes the server's stderr must not end it by
		// SIGPIPE at its next log line: only an escalation may.
		signal.Ignore(syscall.SIGPIPE)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case sig := <-ch:
				s.gotSignal(sig.(syscall.Signal), end)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}

func (s *Server) gotSignal(sig syscall.Signal, end context.CancelFunc) {
	ignored := s.cfg.faults.IgnoreSIGTERM && sig != syscall.SIGQUIT
	at := time.Now()
	s.update(func(r *Report) { r.Signals = append(r.Signals, signalRecord{signalName(sig), at, ignored}) })
	if s.stdin != nil {
		s.noteUnread(s.stdin) // a SIGKILL may follow before stdin is read
	}
	if s.cfg.reportFile != "" {
		// At once: a SIGKILL may follow any moment.
		s.writeReportFile(false)
	}
	switch {
	case sig == syscall.SIGQUIT:
		signal.Reset(syscall.SIGQUIT)
		_ = syscall.Kill(os.Getpid(), syscall.SIGQUIT)
	case ignored:
		s.logf("%s ignored (IgnoreSIGTERM)", signalName(sig))
	default:
		end()
	}
}

func signalName(sig syscall.Signal) string {
	switch sig {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	}
	return sig.String()
}
