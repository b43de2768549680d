package proxy

import (
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

// The record has one writer, the observer's goroutine, so that its events
// are in the order things happened. Events that happen outside the traffic
// (the server's exit, a signal, a fault, a pipe the proxy closed, the end
// of a source) are queued with their time by the goroutine that saw them;
// the observer takes the queue before it looks at the traffic's channels,
// so every chunk that happened before a queued event is in a channel by
// then, and it writes both in time order.

// noted is an event queued for the observer.
type noted struct {
	t time.Time
	e record.Event
}

// notes is the observer's queue of noted events.
type notes struct {
	mu   sync.Mutex
	q    []noted
	lost int64 // events dropped because the queue was full
}

// maxNotes bounds the queue; a record that cannot be written as fast
// loses the newest notes, counted as dropped events.
const maxNotes = 4096

// note queues e, which happened at t, for the record. It never blocks.
func (p *Proxy) note(t time.Time, e record.Event) {
	if p.rec == nil {
		return
	}
	o := p.obs
	o.notes.mu.Lock()
	if len(o.notes.q) < maxNotes {
		o.notes.q = append(o.notes.q, noted{t, e})
	} else {
		o.notes.lost++
	}
	o.notes.mu.Unlock()
	select {
	case o.nudge <- struct{}{}:
	default:
	}
}

// takeNotes empties the queue.
func (o *observer) takeNotes() []noted {
	o.notes.mu.Lock()
	defer o.notes.mu.Unlock()
	q := o.notes.q
	o.notes.q = nil
	if o.notes.lost > 0 {
		o.mu.Lock() // order: notes.mu, then mu
		o.m.DroppedEvents += o.notes.lost
		o.mu.Unlock()
		o.notes.lost = 0
	}
	return q
}

// writeNote writes a queued event.
func (o *observer) writeNote(n noted) {
	o.p.rec.emit(n.t, n.e)
}
