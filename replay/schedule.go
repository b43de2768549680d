package replay

import (
	"context"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/record"
)

// pace is how a replay is paced, from its options.
type pace struct {
	speed    float64       // 0: causal; else Timed's speed
	idleCap  time.Duration // Timed's idle cap, 0 for none
	patience time.Duration
}

func (o *options) pace() pace { return pace{speed: o.speed, idleCap: o.idleCap, patience: o.patience} }

// gap returns how long to wait for a recorded gap between two actions: 0
// in causal mode; in timed mode, the gap capped at the idle cap and
// divided by the speed.
func (p pace) gap(recorded time.Duration) time.Duration {
	if p.speed <= 0 || recorded <= 0 {
		return 0
	}
	if p.idleCap > 0 {
		recorded = min(recorded, p.idleCap)
	}
	return time.Duration(float64(recorded) / p.speed)
}

// bound returns how long to wait for something that took recorded in the
// record before calling it missing: the patience plus twice recorded.
func (p pace) bound(recorded time.Duration) time.Duration {
	return p.patience + 2*max(recorded, 0)
}

// action is one thing a player does at a recorded time: write a chunk (or
// a frame, for a record without bodies), begin or end a stall of its
// reads, or close its output (the host its stdin, the server its stdout).
type action struct {
	t      time.Duration
	chunk  *Chunk
	frame  int // a frame of the player's side; -1 none
	stall  int // index of a stall that begins; -1 none
	resume int // index of a stall that ends; -1 none
	close  bool
}

func writeAction(t time.Duration, c *Chunk, frame int) action {
	return action{t: t, chunk: c, frame: frame, stall: -1, resume: -1}
}

// schedule returns the actions of one side of rec in the order of their
// recorded times: the chunks of dirs (or, when none of dir's chunks has
// its bytes, frames one by one), the stalls of its reads (beginning and,
// if recorded, end), and its close at closeAt (-1: none). Ties keep that
// order: writes, then stalls, then the close.
func schedule(rec *Record, dirs []string, frames []Frame, stalls []Stall, closeAt time.Duration) []action {
	var as []action
	bodies := false
	for i := range rec.Chunks {
		if c := &rec.Chunks[i]; c.Dir == dirs[0] && c.Parts != nil {
			bodies = true
		}
	}
	if bodies {
		for i := range rec.Chunks {
			if c := &rec.Chunks[i]; slices.Contains(dirs, c.Dir) {
				as = append(as, writeAction(hostTime(c, stalls), c, -1))
			}
		}
	} else {
		for i, f := range frames {
			as = append(as, writeAction(f.T0, nil, i))
		}
	}
	for k, st := range stalls {
		as = append(as, action{t: st.Since, frame: -1, stall: k, resume: -1})
		if st.Ended {
			as = append(as, action{t: st.Since + st.Dur, frame: -1, stall: -1, resume: k})
		}
	}
	if closeAt >= 0 {
		as = append(as, action{t: closeAt, frame: -1, stall: -1, resume: -1, close: true})
	}
	slices.SortStableFunc(as, func(a, b action) int { return int(a.t - b.t) })
	return as
}

// hostTime returns when the host's chunk c is played: when the proxy read
// it, or, for bytes that waited in the pipe for the proxy (Chunk.Since),
// the earliest they may have been written — inside the host's stall of
// reads that began meanwhile, if one did: the host wrote them while the
// proxy, hence the server, was not reading, which is what the reads rule
// judges. Other streams' chunks are played when they were read.
func hostTime(c *Chunk, stalls []Stall) time.Duration {
	if c.Dir != record.DirIn || c.Since >= c.T {
		return c.T
	}
	for _, st := range stalls {
		if st.Since <= c.Since && c.Since < st.Since+st.Dur {
			return c.Since // in a stall already
		}
	}
	for _, st := range stalls {
		if st.Since > c.Since && st.Since < c.T {
			return st.Since + time.Microsecond // after the stall's own action
		}
	}
	return c.Since
}

// stallsOf returns rec's stalls of direction d.
func stallsOf(rec *Record, d string) []Stall {
	var out []Stall
	for _, st := range rec.Stalls {
		if st.Dir == d {
			out = append(out, st)
		}
	}
	return out
}

// clock paces a player's actions: each waits for what it depended on
// (deps, given the recorded gap since the previous action), then, in
// timed mode, for the recorded gap since the previous action, counted
// from when that one was due or, if it ran late, from now: the wait for
// what an action depends on is part of its gap, as it was in the record.
type clock struct {
	pace  pace
	prevT time.Duration
	due   time.Time
}

// next waits before the action at recorded time t.
func (c *clock) next(ctx context.Context, t time.Duration, deps func(gap time.Duration) error) error {
	recorded := t - c.prevT
	c.prevT = t
	gap := c.pace.gap(recorded)
	if gap > 0 {
		if now := time.Now(); c.due.Before(now) {
			c.due = now
		}
		c.due = c.due.Add(gap)
	}
	if err := deps(recorded); err != nil {
		return err
	}
	if gap > 0 {
		return bound.Pass(ctx, time.Until(c.due)) // timed mode's gaps are the point
	}
	return nil
}
