package proxy

import (
	"io"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/fill"
	"github.com/mcpstdio/mcpstdio/record"
)

// Defaults of Config.
const (
	DefaultChunkSize            = 64 << 10
	DefaultHeadBytes            = 256
	DefaultParseLimit           = 64 << 10
	DefaultObserverBuffer       = 4 << 20
	DefaultObserverBufferBodies = 64 << 20
	DefaultMaxPending           = 4096
	DefaultStuck                = time.Second
	DefaultUnanswered           = 10 * time.Second
	DefaultExitGrace            = 2 * time.Second
	DefaultBlockEvent           = 100 * time.Millisecond
	DefaultStatusInterval       = time.Second
)

// Config configures a proxy. The zero value is a faithful proxy that
// records nothing.
type Config struct {
	// ChunkSize is the most bytes each direction reads at once and holds
	// while writing them on: the proxy's own buffering per direction
	// (default DefaultChunkSize). A chunk spliced from pipe to pipe (Linux)
	// is at most ChunkSize too, and is not held.
	ChunkSize int
	// PipeCapacity, if positive, sets the capacity of the kernel pipes to
	// the server's stdin, stdout and stderr (Linux F_SETPIPE_SZ; the kernel
	// rounds up to a power-of-two number of pages). Elsewhere Start fails
	// with an error wrapping errors.ErrUnsupported.
	PipeCapacity int

	// Record receives the record in whole event lines (see record.Event),
	// from one goroutine, in the order things happened: the header line
	// alone in the first Write, then each batch of events the observer
	// takes in one Write (one or more lines, at most 64 KiB beyond one
	// line), before it waits for more: an event is written within a few
	// milliseconds of happening, if the machine lets the proxy run, and a
	// tick event after a quiet spell (see record.EvTick). Nil records
	// nothing. After a Write fails, one last Write of one line says why
	// (record.EvCut), whether or not it succeeds, and nothing more is
	// written; the failure is in the Status (RecordError) and Wait returns
	// it, and the proxy goes on forwarding. A writer that keeps part of a
	// failed Write should drop it, so that the record stays whole lines.
	Record io.Writer
	// LogBodies makes chunk events carry the chunk's bytes (after
	// redaction), so that a replay has every byte; otherwise frames are kept
	// as head, length and hash.
	LogBodies bool
	// HeadBytes is how much of each frame a frame event keeps (default
	// DefaultHeadBytes); negative keeps none.
	HeadBytes int
	// ParseLimit: frames up to this many bytes are parsed in full (tool
	// name, progress token, error code); longer ones are only scanned for
	// their top-level id and method, in constant memory (default
	// DefaultParseLimit).
	ParseLimit int
	// Redact lists JSON paths from the message root whose values are
	// replaced by "[redacted]" before anything is recorded, such as
	// "params.arguments.query"; "*" matches any one key or array index.
	Redact []string
	// RedactKeys: a value whose object key contains one of these words
	// (ASCII case-insensitive) is redacted too. Nil means
	// DefaultRedactKeys; an empty non-nil slice turns this off.
	RedactKeys []string

	// Faults are injected in the order given; each is recorded when it
	// fires and when it ends. See record.Fault. A fault never holds the
	// server past the session: ExitGrace after the host ended the session
	// (it closed the proxy's stdin, or Signal passed on a signal that ends
	// a process) with the server still running, every fault lets go of it
	// (a stop reads again, pacing stops, a sigstop continues the server);
	// a host that closes the proxy's stdout or stderr ends a stop or
	// pacing of that direction at once (Unix, where the proxy watches its
	// streams for that while a fault could hold the server).
	Faults []record.Fault

	// Stuck is how long a write must be blocked before a verdict calls the
	// destination "not reading" (default DefaultStuck).
	Stuck time.Duration
	// Unanswered is how long a request may wait for its response before a
	// verdict names it (default DefaultUnanswered).
	Unanswered time.Duration
	// BlockEvent is how long a write must be in progress before the record
	// gets a block event for it (default DefaultBlockEvent); the write's
	// exact duration is in its chunk event anyway.
	BlockEvent time.Duration
	// ExitGrace is how long the proxy waits, after the server exited, for
	// its stdout and stderr to end (a process it started may still hold
	// them) before it closes them, and, after the host ended the session,
	// for the server to exit before the faults let go of it (default
	// DefaultExitGrace).
	ExitGrace time.Duration

	// OnStatus, if set, is called with the live Status every
	// StatusInterval (default DefaultStatusInterval) from the observer's
	// goroutine, as http.Server calls its hooks: mcpstdio rewrites its
	// status file there. The first error it returns is recorded (EvError);
	// the proxy goes on forwarding and calling it. StatusInterval is also
	// how long the record may be quiet while anything waits before a tick
	// event says the proxy still runs (record.EvTick).
	OnStatus       func(Status) error
	StatusInterval time.Duration

	// ObserverBuffer is the most bytes per direction of copies waiting for
	// the observer, allocated only as the observer falls behind (and as
	// much again in copies of small reads); when it is full, the observer
	// loses detail (recorded), never traffic (default DefaultObserverBuffer,
	// or DefaultObserverBufferBodies with LogBodies, so that a record meant
	// for replay keeps its bodies unless memory forbids).
	ObserverBuffer int
	// MaxPending bounds the pending-request table; beyond it the oldest
	// entry is forgotten and counted (default DefaultMaxPending).
	MaxPending int

	// Version is the proxy's version, for the record header.
	Version string
}

// Check reports a configuration Start would refuse: a malformed redaction
// path or fault.
func (c Config) Check() error {
	if _, err := newRedactPolicy(nil, c.Redact); err != nil {
		return err
	}
	_, err := newFaultSet(c.Faults)
	return err
}

func (c Config) withDefaults() Config {
	fill.Default(&c.ChunkSize, DefaultChunkSize)
	if c.HeadBytes == 0 {
		c.HeadBytes = DefaultHeadBytes
	}
	c.HeadBytes = max(c.HeadBytes, 0)
	fill.Default(&c.ParseLimit, DefaultParseLimit)
	if c.LogBodies {
		fill.Default(&c.ObserverBuffer, DefaultObserverBufferBodies)
	}
	fill.Default(&c.ObserverBuffer, DefaultObserverBuffer)
	fill.Default(&c.MaxPending, DefaultMaxPending)
	fill.Default(&c.Stuck, DefaultStuck)
	fill.Default(&c.Unanswered, DefaultUnanswered)
	fill.Default(&c.BlockEvent, DefaultBlockEvent)
	fill.Default(&c.ExitGrace, DefaultExitGrace)
	fill.Default(&c.StatusInterval, DefaultStatusInterval)
	if c.RedactKeys == nil {
		c.RedactKeys = DefaultRedactKeys
	}
	return c
}

// Streams are the host's side of the proxy: what the host writes to the
// server (Stdin) and where the server's output goes (Stdout, Stderr). In a
// process they are os.Stdin, os.Stdout and os.Stderr.
//
// If a stream implements io.Closer, the proxy closes it to pass an end on:
// Stdout and Stderr when the server closes its own, Stdin when the server
// closes its stdin or the proxy ends (Wait). If it has SetReadDeadline or SetWriteDeadline (an
// *os.File on a pipe, in non-blocking mode), the proxy uses them to end a
// blocked read or write when it stops; otherwise a read of Stdin that never
// returns keeps one goroutine until it does (see Proxy.Wait).
type Streams struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}
