// Package hostctl reaches the parts of an mcptest.Session that only this
// module's replay players and criteria batteries use, so that they are not
// in mcptest's API: mcptest fills in the functions when it is initialized.
// A session argument is an *mcptest.Session and a pending one an
// *mcptest.Pending; Expect returns an *mcptest.Pending and the option
// functions an mcptest.Option.
package hostctl

import (
	"context"
	"encoding/json"
	"time"
)

// StdoutState is a snapshot of the host's side of the server's stdout.
type StdoutState struct {
	Read    int64 // bytes the host has read from the pipe (Stats.StdoutBytes)
	Stalled bool  // reads are stalled (StallReads, or StallReadsAfter's bytes let through)
	// Framed is how many of the bytes read the framer has taken, Partial
	// how many of those belong to a line not yet ended
	// (pipes.Framer.Stats); it is 0 exactly when the framer holds no
	// bytes.
	Framed, Partial int64
	// Buffered is how many bytes wait in the pipe, unread, and Capacity
	// the pipe's size; -1 and 0 where the system does not tell (off Linux).
	Buffered, Capacity int
	Ended              bool // stdout has ended and the reader is done
}

// The session's hidden calls, set by package mcptest.
var (
	// Changed returns a channel closed at the next change a waiter may
	// care about: a frame dispatched, a request ended, stdout ended, the
	// session closed. Bytes that arrive inside a frame change nothing:
	// poll Stdout for them.
	Changed func(s any) <-chan struct{}
	// Expect enters a request with id, which the caller writes itself with
	// WriteStdin, as pending: its response and progress go to the Pending
	// as for Send. It fails if the session has ended or a request with id
	// is pending. The progress token is taken from params; a cancel the
	// caller writes is not seen by the session (its response is not Late).
	Expect func(s any, id int64, method string, params json.RawMessage) (any, error)
	// Stdout returns the state of the server's stdout now.
	Stdout func(s any) StdoutState
	// StallReadsAfter lets exactly n more bytes of stdout through and then
	// stalls reads, as Session.StallReads.
	StallReadsAfter func(s any, n int64)
	// WaitStdoutBytes returns once the host has received at least n bytes
	// of the server's stdout in all, bounded by ctx and the session
	// timeout.
	WaitStdoutBytes func(ctx context.Context, s any, n int64) error
	// Stderr returns what the server wrote to stderr, bounded: the first
	// and the last 32 KiB, with a marker where bytes were dropped.
	Stderr func(s any) []byte
	// PID returns the server's process id, or 0 for an in-process server.
	PID func(s any) int
	// Progress returns how many notifications/progress have arrived for a
	// pending request's progress token (0 without one), kept or not.
	Progress func(p any) int64
	// Received returns how many bytes of a pending request's response the
	// host has read so far, counted from its top-level "id" on (0 before).
	Received func(p any) int64
	// ProbeTimeout sets how long negotiation waits for the
	// server/discover probe's answer before it takes the server for a
	// legacy one (default 5s).
	ProbeTimeout func(d time.Duration) any
	// StartTimeout bounds the waits of Start's handshake when it is longer
	// than WithTimeout's bound, the default (and 0).
	StartTimeout func(d time.Duration) any
	// Grace sets how long Close waits at each step of stopping the server,
	// and for the server's stdout to end (default 2s).
	Grace func(d time.Duration) any
)
