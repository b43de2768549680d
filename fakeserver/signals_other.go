//go:build !unix

package fakeserver

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"time"
)

// catchSignals ends the session on an interrupt, recorded in
// Report.Signals; there is no SIGTERM to ignore here.
func (s *Server) catchSignals(end context.CancelFunc) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ch:
			at := time.Now()
			s.update(func(r *Report) { r.Signals = append(r.Signals, signalRecord{"SIGINT", at, false}) })
			end()
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
		wg.Wait()
	}
}
