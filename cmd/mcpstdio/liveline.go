package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// statusEvery is how often the live status line is redrawn.
const statusEvery = 200 * time.Millisecond

// liveStatus is one line on a terminal saying what is running and for how
// long, redrawn in place with a carriage return (no escape sequences, so
// any terminal shows it). Whoever prints a line to the same terminal calls
// pause first, which erases it. A nil *liveStatus does nothing: the output
// is not a terminal.
type liveStatus struct {
	w     io.Writer
	width int              // columns; the line is cut to width-1 so it never wraps
	now   func() time.Time // time.Now; a test's clock

	mu    sync.Mutex
	label string // what is running; "" while nothing is shown
	since time.Time
	drawn int // columns the line occupies on the screen, 0 when erased

	stop    chan struct{} // closed by close; nil when no redraw loop runs
	done    chan struct{}
	stopped sync.Once
}

// startLiveStatus returns a live status on w, a terminal of width columns
// (0: unknown, taken as 80), redrawn every "every" until close.
func startLiveStatus(w io.Writer, width int, every time.Duration) *liveStatus {
	l := newLiveStatus(w, width, time.Now)
	stop, done := make(chan struct{}), make(chan struct{})
	l.stop, l.done = stop, done
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				l.redraw()
			}
		}
	}()
	return l
}

// newLiveStatus returns a live status with no redraw loop: redraw is called
// by hand.
func newLiveStatus(w io.Writer, width int, now func() time.Time) *liveStatus {
	if width <= 0 {
		width = 80
	}
	return &liveStatus{w: w, width: width, now: now}
}

// locked runs f with the line's lock held; on a nil live status (no
// terminal) it does nothing.
func (l *liveStatus) locked(f func()) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
}

// show starts showing label, timed from now, and draws it.
func (l *liveStatus) show(label string) {
	l.locked(func() {
		l.label, l.since = label, l.now()
		l.drawLocked()
	})
}

// redraw draws the line again with the time elapsed, if something is shown.
func (l *liveStatus) redraw() { l.locked(l.drawLocked) }

// pause erases the line and shows nothing until the next show.
func (l *liveStatus) pause() {
	l.locked(func() {
		l.label = ""
		if l.drawn > 0 {
			fmt.Fprint(l.w, "\r"+strings.Repeat(" ", l.drawn)+"\r")
			l.drawn = 0
		}
	})
}

// close erases the line and ends the redraw loop. It may be called more
// than once.
func (l *liveStatus) close() {
	if l == nil {
		return
	}
	l.pause()
	if l.stop != nil {
		l.stopped.Do(func() {
			close(l.stop)
			<-l.done
		})
	}
}

func (l *liveStatus) drawLocked() {
	if l.label == "" {
		return
	}
	text := statusText(l.label, l.now().Sub(l.since), l.width)
	// Spaces cover what is left of a longer line drawn before.
	fmt.Fprint(l.w, "\r"+text+strings.Repeat(" ", max(0, l.drawn-len(text))))
	l.drawn = max(l.drawn, len(text))
}

// statusText is the live status line: what is running and for how long, in
// the columns of a result line (see assertions.Result.Line), cut to fit a
// terminal of width columns without wrapping.
func statusText(label string, elapsed time.Duration, width int) string {
	s := fmt.Sprintf("  %-5s %-28s %7.1fs", "...", label, elapsed.Seconds())
	if len(s) > width-1 {
		s = s[:max(0, width-1)]
	}
	return s
}
