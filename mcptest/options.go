package mcptest

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/fill"
	"github.com/mcpstdio/mcpstdio/wire"
)

// Bounds. What the host keeps is bounded in count and in bytes (Limits and
// its defaults): notifications for WaitNotification (a long one is kept as
// its head and size), junk lines, the transcript, server requests waiting
// for the handler. Beyond a bound the oldest go first, counted in Stats and
// named in Diagnose; a response is never dropped. So the host's heap is
// O(WithMaxFrame + the keep budgets) whatever the server writes.
// Limits.OverflowEndSession turns a reached bound into the end of the
// session, for a test that asserts a server does not flood its host.

// Option configures a Session; Start applies them in order and fails on an
// invalid value, naming the option.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// ServerRequestHandler answers a request the server sends to the host
// (ping, roots/list, sampling/createMessage, elicitation/create, …), set
// with WithServerRequests. Its result is marshalled as the response's
// result; an error is sent as is if it is a *wire.RPCError, else as -32603.
// ctx ends when the session is closed.
//
// Handlers run on one goroutine of their own, one request at a time, never
// on the stdout reader: a handler that blocks delays only later server
// requests, which wait in a queue bounded by Limits.ServerRequests and
// Limits.ServerRequestBytes (a request beyond it is dropped unanswered and
// counted), and never the responses to the host's own calls. A panic in a
// handler is recovered: the server gets -32603, and Close reports the panic
// with its stack.
type ServerRequestHandler func(ctx context.Context, req *wire.Message) (result any, err error)

// What the defaults of Limits hold at most: about 16 MiB of notifications,
// 32 KiB of junk heads, 128 KiB of transcript heads and 16 MiB of server
// requests waiting for a handler, besides one frame of up to WithMaxFrame
// bytes being read, so the host's heap is O(WithMaxFrame + these budgets)
// whatever the server writes. Responses are never dropped: each reaches its
// Pending or is counted as late or unknown.

// Limits are the host's bounds on what it keeps of the server's output (zero
// means the default), and an Option: a bound reached drops the oldest kept
// item, counted in Stats, never traffic.
type Limits struct {
	Notifications      int   // notifications kept for WaitNotification (default 1024; all are counted)
	NotificationBytes  int64 // their bytes (default 16 MiB)
	NotificationHead   int   // bytes of one kept whole (default 64 KiB); a longer one keeps its head
	Junk               int   // non-JSON-RPC stdout lines kept for Diagnose (default 64)
	Transcript         int   // entries Transcript keeps (default 256)
	Head               int   // bytes of each frame the transcript and junk keep (default 512)
	ServerRequests     int   // server requests waiting for the handler (default 64); one beyond is dropped unanswered
	ServerRequestBytes int64 // their bytes (default 16 MiB)
	// OverflowEndSession makes a reached Notifications, Junk or
	// ServerRequests bound end the session (ErrClosed naming it).
	OverflowEndSession bool
}

// The defaults of Limits.
const (
	defaultNotifications      = 1024
	defaultNotificationBytes  = 16 << 20
	defaultNotificationHead   = 64 << 10
	defaultJunk               = 64
	defaultTranscript         = 256
	defaultHead               = 512
	defaultServerRequests     = 64
	defaultServerRequestBytes = 16 << 20
)

const (
	defaultMaxFrame     = 16 << 20 // the official Go SDK's default line limit
	defaultTimeout      = 10 * time.Second
	defaultGrace        = 2 * time.Second
	defaultProbeTimeout = 5 * time.Second
	stderrKeep          = 64 << 10
)

type config struct {
	pipeCapacity   int
	maxFrame       int
	limits         Limits
	timeout        time.Duration
	startTimeout   time.Duration // 0: timeout
	grace          time.Duration
	probeTimeout   time.Duration
	version        string
	noHandshake    bool
	clientName     string
	clientVersion  string
	serverRequests ServerRequestHandler
	stderr         io.Writer
}

func newConfig(opts []Option) (config, error) {
	c := config{
		maxFrame:      defaultMaxFrame,
		timeout:       defaultTimeout,
		grace:         defaultGrace,
		probeTimeout:  defaultProbeTimeout,
		clientName:    "mcptest",
		clientVersion: "0.1.0",
	}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&c); err != nil {
			return c, err
		}
	}
	l := &c.limits
	fill.Default(&l.Notifications, defaultNotifications)
	fill.Default(&l.NotificationBytes, defaultNotificationBytes)
	fill.Default(&l.NotificationHead, defaultNotificationHead)
	fill.Default(&l.Junk, defaultJunk)
	fill.Default(&l.Transcript, defaultTranscript)
	fill.Default(&l.Head, defaultHead)
	fill.Default(&l.ServerRequests, defaultServerRequests)
	fill.Default(&l.ServerRequestBytes, defaultServerRequestBytes)
	return c, nil
}

// nonNegative checks an option's number: zero means the default, negative
// is an error naming the option.
func nonNegative[T int | int64 | time.Duration](option string, v T, def any) error {
	if v < 0 {
		return fmt.Errorf("mcptest: %s(%v): must not be negative (0 means the default, %v)", option, v, def)
	}
	return nil
}

// Small pipes make back-pressure appear with small responses; below 16 KiB
// (four pages) a writer blocked behind a few bytes may not look full (see
// pipes.EffectivelyFull).

// WithPipeCapacity sets the server's stdin and stdout pipe buffers to n bytes
// (0 keeps the default). Linux only: elsewhere Start fails with errors.ErrUnsupported.
func WithPipeCapacity(n int) Option {
	// n is rounded up to a power-of-two number of pages.
	return optionFunc(func(c *config) error {
		c.pipeCapacity = n
		return nonNegative("WithPipeCapacity", n, "the system's pipe size")
	})
}

// WithMaxFrame sets the transport limit, the most bytes of one message from
// the server without its newline (default 16 MiB). A longer frame fails its
// request with a *pipes.FrameTooLargeError.
func WithMaxFrame(n int) Option {
	// 16 MiB is the official Go SDK's limit. The frame is discarded unparsed;
	// its id is found by a scanner (see source.go).
	return optionFunc(func(c *config) error {
		if n == 0 {
			n = defaultMaxFrame
		}
		c.maxFrame = n
		return nonNegative("WithMaxFrame", n, "16 MiB")
	})
}

// apply makes Limits an Option: mcptest.Start(ctx, target,
// mcptest.Limits{Notifications: 100}). Zero fields keep their defaults.
func (l Limits) apply(c *config) error {
	{
		for _, f := range []struct {
			name string
			v    int64
		}{
			{"Notifications", int64(l.Notifications)}, {"NotificationBytes", l.NotificationBytes},
			{"NotificationHead", int64(l.NotificationHead)}, {"Junk", int64(l.Junk)},
			{"Transcript", int64(l.Transcript)}, {"Head", int64(l.Head)},
			{"ServerRequests", int64(l.ServerRequests)}, {"ServerRequestBytes", l.ServerRequestBytes},
		} {
			if f.v < 0 {
				return fmt.Errorf("mcptest: Limits.%s = %d: must not be negative (0 means the default)", f.name, f.v)
			}
		}
		c.limits = l
		return nil
	}
}

// durationOption is an option setting a duration of the config, where 0
// means the default.
func durationOption(name string, d, def time.Duration, field func(*config) *time.Duration) Option {
	return optionFunc(func(c *config) error {
		*field(c) = cmp.Or(d, def)
		return nonNegative(name, d, def)
	})
}

// WithTimeout bounds every wait no tighter context bounds (responses, stdin
// writes, the handshake); default 10s. StartServer also keeps the test deadline.
func WithTimeout(d time.Duration) Option {
	return durationOption("WithTimeout", d, defaultTimeout, func(c *config) *time.Duration { return &c.timeout })
}

// WithStartTimeout bounds the waits of Start's handshake (the
// server/discover probe, within WithProbeTimeout's bound, and initialize)
// when d is longer than WithTimeout's bound; 0, the default, keeps
// WithTimeout's bound for them. A server that is slow to start (a large
// binary, a JIT, a cold cache) is then not bounded by what bounds its
// answers later. A negative d is an error from Start.
func WithStartTimeout(d time.Duration) Option {
	return durationOption("WithStartTimeout", d, 0, func(c *config) *time.Duration { return &c.startTimeout })
}

// WithGrace sets how long Close waits at each step of stopping the server
// (after closing stdin, after SIGTERM, after SIGQUIT and after SIGKILL),
// and for the server's stdout to close once it exited; the default (and 0)
// is 2s. A criterion that closes many sessions sets it lower; a server that
// saves state on EOF may need more. A negative d is an error from Start.
func WithGrace(d time.Duration) Option {
	return durationOption("WithGrace", d, defaultGrace, func(c *config) *time.Duration { return &c.grace })
}

// WithProbeTimeout sets how long negotiation waits for the answer to its
// server/discover probe before it takes the server for one of an earlier
// era and sends initialize (default 5s, mcp-go's client's). The server's
// start-up is inside that wait: a modern server that takes longer than d to
// start is spoken to as a legacy one, and its late answer to the probe is
// counted as late (Stats.LateResponses), not as an unknown id. A negative d
// is an error from Start.
func WithProbeTimeout(d time.Duration) Option {
	return durationOption("WithProbeTimeout", d, defaultProbeTimeout, func(c *config) *time.Duration { return &c.probeTimeout })
}

var versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// WithProtocolVersion pins the protocol version v (YYYY-MM-DD) instead of
// negotiating it, as "" (the default) does.
func WithProtocolVersion(v string) Option {
	// 2026-07-28 or later is the stateless era, an earlier one the initialize
	// handshake offering v.
	return optionFunc(func(c *config) error {
		if v != "" && !versionPattern.MatchString(v) {
			return fmt.Errorf("mcptest: WithProtocolVersion(%q): not a protocol revision (YYYY-MM-DD, e.g. %s)", v, wire.LatestVersion)
		}
		c.version = v
		return nil
	})
}

// WithoutHandshake makes Start send neither the probe nor initialize, for
// raw servers: the session then speaks no era (no _meta; Ping sends ping).
func WithoutHandshake() Option {
	return optionFunc(func(c *config) error { c.noHandshake = true; return nil })
}

// WithServerRequests sets h to answer the server's requests to the host
// (see ServerRequestHandler). Without it the session answers ping and fails
// every other request with -32601 (method not found). In the 2026-07-28
// era a server must not send requests on stdio: h is not called, each
// request is failed with -32601 and counted as a violation
// (Stats.ProtocolViolations).
func WithServerRequests(h ServerRequestHandler) Option {
	return optionFunc(func(c *config) error { c.serverRequests = h; return nil })
}

// WithStderr tees the server's stderr to w (a mutex-guarded buffer, or
// t.Output()); chunks a slow w falls 256 behind on are dropped
// (Stats.StderrTeeDropped).
func WithStderr(w io.Writer) Option {
	// The tee never slows the drain; the session keeps all of it, bounded (Diagnose shows its tail).
	return optionFunc(func(c *config) error { c.stderr = w; return nil })
}
