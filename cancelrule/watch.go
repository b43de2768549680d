package cancelrule

import (
	"context"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// Config says how Watch cancels and how long it watches.
type Config struct {
	// Grace is how long the work may go on after the cancel: what is seen
	// within it is not held against the server. Default 200ms.
	Grace time.Duration
	// Watch is how long the work is watched after the grace. Default
	// 5×Grace. A response does not end the watch, since the work must be
	// judged first (a server may stop the work and answer anyway); once it
	// has come, the server seen stopped by mcptest's rule
	// (Session.WaitStopped) ends it.
	Watch time.Duration
	// Reason is the reason the notifications/cancelled carries. Default
	// "mcpstdio: cancel".
	Reason string
	// Sent, if not zero, says the caller has already written the
	// notifications/cancelled for the request itself (with
	// Session.WriteStdin, as a replay of a recorded host does) at that
	// time; Watch then sends nothing, and times the grace from Sent.
	Sent time.Time
}

func (c Config) withDefaults() Config {
	if c.Grace <= 0 {
		c.Grace = 200 * time.Millisecond
	}
	if c.Watch <= 0 {
		c.Watch = 5 * c.Grace
	}
	if c.Reason == "" {
		c.Reason = "mcpstdio: cancel"
	}
	return c
}

// Seen is what Watch saw of a cancelled request: the server's work at the
// cancel, after the grace and at the end of the watch, and the response if
// one came. Judge turns it into an Outcome.
type Seen struct {
	s                         *mcptest.Session
	p                         *mcptest.Pending
	atCancel, afterGrace, end sample
	grace, watch              time.Duration
	started                   map[int]string // processes the server started since the baseline
	answeredIn                time.Duration  // when its response arrived after the cancel; -1 if it did not
	progressAtAnswer          int64          // progress notifications seen when it arrived
	rule                      *mcptest.Activity
	background                float64 // the server's CPU demand before the call; -1 if unknown
}

// Watch cancels p (unless cfg.Sent says the caller has), lets the grace
// pass, then watches the server's work for cfg.Watch; b is the server's
// Baseline from before p was sent. It blocks for about Grace+Watch, less
// if the response has come and the server is seen stopped, and returns
// early with ctx's error if ctx ends. The error of a failed cancel write is
// returned as is. Watch leaves no goroutine behind.
func Watch(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, b Baseline, cfg Config) (*Seen, error) {
	cfg = cfg.withDefaults()
	c := &Seen{s: s, p: p, grace: cfg.Grace, watch: cfg.Watch, answeredIn: -1, background: b.Background}
	c.atCancel = take(s, p)
	at := cfg.Sent
	if at.IsZero() {
		at = time.Now()
		if err := p.Cancel(cfg.Reason); err != nil {
			return c, err
		}
	}
	type answer struct {
		in       time.Duration
		progress int64
	}
	answered := make(chan answer, 1)
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-p.Done():
			answered <- answer{time.Since(at), p.Progress()}
		case <-wctx.Done():
			answered <- answer{in: -1}
		}
	}()
	if err := bound.Pass(ctx, time.Until(at.Add(c.grace))); err != nil {
		stop()
		<-answered
		return c, err
	}
	c.afterGrace = take(s, p)
	rule := make(chan *mcptest.Activity, 1)
	go func() {
		a, err := s.WaitStopped(wctx)
		if err != nil {
			rule <- nil
			return
		}
		rule <- &a
	}()
	t := time.NewTimer(c.watch)
	defer t.Stop()
	done, stopped := p.Done(), rule
	isAnswered := false
	var err error
watch:
	for {
		select {
		case <-done:
			done, isAnswered = nil, true
			if c.rule != nil {
				break watch
			}
		case a := <-stopped:
			stopped, c.rule = nil, a
			if a != nil && isAnswered {
				break watch
			}
		case <-t.C:
			break watch
		case <-ctx.Done():
			err = ctx.Err()
			break watch
		}
	}
	c.end = take(s, p)
	stop()
	if stopped != nil {
		<-stopped
	}
	if a := <-answered; a.in >= 0 && responded(p) {
		c.answeredIn, c.progressAtAnswer = a.in, a.progress
	}
	if c.end.visible && b.from.visible {
		c.started = newProcs(b.from.procs, c.end.procs)
	}
	return c, err
}

// Answered reports whether the cancelled request's response came while it
// was watched, and how long after the cancel.
func (c *Seen) Answered() (bool, time.Duration) {
	return c.answeredIn >= 0, c.answeredIn
}

// response returns the cancelled request's response, if it came while
// watched; nil otherwise (never waiting for one).
func (c *Seen) response() *mcptest.Response {
	if c.answeredIn < 0 {
		return nil
	}
	resp, err := c.p.Wait(context.Background())
	if err != nil {
		return nil
	}
	return resp
}
