package mcptest

import (
	"context"
	"io"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Option configures a Session. Options are applied in order by Start.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// ServerRequestHandler answers a request the server sends to the host (in the
// legacy era: ping, roots/list, sampling/createMessage, …). It returns the
// result to send, or an error: a *wire.RPCError is sent as is, any other error
// as an internal error (-32603). It runs on the dispatcher goroutine, so a
// slow handler delays the dispatch of later messages (never the reading of
// stdout); ctx ends when the session closes.
type ServerRequestHandler func(ctx context.Context, req *wire.Message) (result any, err error)

// OverflowPolicy says what the stdout reader does with a message when the
// dispatcher queue is full. Whatever the policy, the reader keeps reading.
type OverflowPolicy int

const (
	// OverflowEndSession drops the message and ends the session: every
	// pending and later request fails with an *OverflowError. Reading and
	// counting stdout continues until the server exits. This is the default.
	OverflowEndSession OverflowPolicy = iota
	// OverflowDrop drops the message, counts it in Stats.Dropped and goes on.
	OverflowDrop
)

const (
	defaultMaxFrame     = 16 << 20 // the official Go SDK's default line limit
	defaultQueue        = 256
	defaultTimeout      = 10 * time.Second
	defaultGrace        = 2 * time.Second
	defaultProbeTimeout = 5 * time.Second
	stderrKeep          = 64 << 10
	transcriptKeep      = 64
	junkKeep            = 64
	notesKeep           = 1024
	headKeep            = 512 // bytes of each frame kept in transcript and junk
)

type config struct {
	pipeCapacity   int
	maxFrame       int
	queue          int
	timeout        time.Duration
	grace          time.Duration
	probeTimeout   time.Duration
	version        string
	noHandshake    bool
	clientName     string
	clientVersion  string
	serverRequests ServerRequestHandler
	stderr         io.Writer
	overflow       OverflowPolicy
}

func defaultConfig() config {
	return config{
		maxFrame:      defaultMaxFrame,
		queue:         defaultQueue,
		timeout:       defaultTimeout,
		grace:         defaultGrace,
		probeTimeout:  defaultProbeTimeout,
		clientName:    "mcptest",
		clientVersion: "0.1.0",
	}
}

// WithPipeCapacity sets the kernel buffer of the server's stdin and stdout
// pipes to n bytes (rounded up by the kernel to a power-of-two number of
// pages). It works on Linux only; elsewhere Start fails with an error
// wrapping errors.ErrUnsupported. Small pipes make back-pressure appear with
// small responses.
func WithPipeCapacity(n int) Option { return optionFunc(func(c *config) { c.pipeCapacity = n }) }

// WithMaxFrame sets the transport limit: the most bytes one JSON-RPC message
// from the server may have on the wire, without its newline. Longer frames
// are discarded unparsed and fail their request with a
// *pipes.FrameTooLargeError. The default is 16 MiB, as in the official Go SDK.
func WithMaxFrame(n int) Option { return optionFunc(func(c *config) { c.maxFrame = n }) }

// WithQueue sets the dispatcher queue: how many parsed-but-undispatched
// messages from the server the host holds before the overflow policy
// applies (default 256). The queue is also bounded in bytes, by
// max(64 MiB, 2×the frame limit).
func WithQueue(n int) Option { return optionFunc(func(c *config) { c.queue = max(n, 1) }) }

// WithOverflow sets what happens when the dispatcher queue is full (default
// OverflowEndSession).
func WithOverflow(p OverflowPolicy) Option { return optionFunc(func(c *config) { c.overflow = p }) }

// WithTimeout sets the bound of every wait that the caller does not bound
// more tightly by a context: waits for responses, writes to stdin, the
// handshake (default 10s; StartServer also stays within the test deadline).
func WithTimeout(d time.Duration) Option { return optionFunc(func(c *config) { c.timeout = d }) }

// WithGrace sets how long Close waits at each step of stopping the server:
// after closing stdin, after SIGTERM, after SIGQUIT and after SIGKILL
// (default 2s).
func WithGrace(d time.Duration) Option { return optionFunc(func(c *config) { c.grace = d }) }

// WithProbeTimeout sets how long negotiation waits for the answer to the
// server/discover probe before it takes the server for a legacy one and
// sends initialize (default 5s, as mcp-go's client). The bound includes
// the server's start-up time.
func WithProbeTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.probeTimeout = d })
}

// WithProtocolVersion pins the protocol version: no probe. A version of
// 2026-07-28 or later means the stateless era (no handshake, _meta on every
// request); an earlier one means the initialize handshake offering v.
func WithProtocolVersion(v string) Option { return optionFunc(func(c *config) { c.version = v }) }

// WithoutHandshake makes Start send neither the probe nor initialize, for
// raw servers; call Session.Handshake to negotiate later.
func WithoutHandshake() Option { return optionFunc(func(c *config) { c.noHandshake = true }) }

// WithClientInfo sets the client name and version sent in initialize and in
// the _meta of modern requests.
func WithClientInfo(name, version string) Option {
	return optionFunc(func(c *config) { c.clientName, c.clientVersion = name, version })
}

// WithServerRequests sets the handler for requests the server sends to the
// host. The default answers ping with an empty result and everything else
// with -32601 (method not found). In the modern era a server request is a
// protocol violation: it is counted in Stats.ProtocolViolations and answered
// with -32601 without calling h.
func WithServerRequests(h ServerRequestHandler) Option {
	return optionFunc(func(c *config) { c.serverRequests = h })
}

// WithStderr tees the server's stderr to w (for example t.Output()). The
// tee never slows the drain of stderr: when w falls more than 256 chunks
// behind, chunks for w are dropped and counted in Stats.StderrTeeDropped.
// Stderr is always kept, bounded, in Session.Stderr.
func WithStderr(w io.Writer) Option { return optionFunc(func(c *config) { c.stderr = w }) }
