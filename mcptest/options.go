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

// Option configures a Session. Options are applied in order by Start; an
// invalid value makes Start fail with an error that names the option. A nil
// Option is ignored.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// ServerRequestHandler answers a request the server sends to the host
// (ping, roots/list, sampling/createMessage, elicitation/create, …), set
// with WithServerRequests. Its result is encoded with encoding/json as the
// response's result (nil as {}); an error is sent as is if it is or wraps a
// *wire.RPCError, else as -32603 (internal error) with its text, as is a
// result that cannot be encoded. ctx ends when Close has stopped the
// server.
//
// Handlers run on one goroutine of their own, one request at a time, never
// on the stdout reader: a handler that blocks delays only later server
// requests, which wait in a queue bounded by Limits.ServerRequests and
// Limits.ServerRequestBytes (a request beyond it is dropped unanswered and
// counted), and never the responses to the host's own calls. A handler that
// ignores ctx past Close's bound is reported by Close. A panic in a handler
// is recovered: the server gets -32603, and Close reports the panic with
// its stack.
type ServerRequestHandler func(ctx context.Context, req *wire.Message) (result any, err error)

// Limits are the host's bounds on what it keeps of the server's output, and
// an Option that sets them (mcptest.Start(ctx, target,
// mcptest.Limits{Notifications: 100})); a zero field means its default, a
// negative one is an error from Start. They bound memory, never traffic: a
// bound that is reached drops the oldest kept item, counts it in Stats and
// names it in Diagnose, and the session goes on (unless
// OverflowEndSession). Responses are never dropped: each reaches its
// Pending or is counted as late or unknown.
//
// With the defaults, the host holds at most about 16 MiB of notifications,
// 32 KiB of junk heads, 128 KiB of transcript heads and 16 MiB of server
// requests waiting for a handler, besides one frame of up to WithMaxFrame
// bytes being read: its heap is O(WithMaxFrame + these budgets) whatever the
// server writes.
type Limits struct {
	// Notifications and NotificationBytes bound the notifications kept for
	// WaitNotification and TakeNotifications (defaults 1024 and 16 MiB);
	// beyond either, the oldest go first (Stats.NotificationsDropped).
	// Every notification is counted in Stats.Notifications, kept or not.
	Notifications     int
	NotificationBytes int64
	// NotificationHead is the most bytes of one notification kept whole
	// (default 64 KiB): a longer one is kept as its first NotificationHead
	// bytes and its size, without Params (Stats.NotificationsCut).
	NotificationHead int
	// Junk is how many stdout lines that are not JSON-RPC are kept, as
	// heads of Head bytes, for Diagnose (default 64; Stats.JunkDropped).
	Junk int
	// Transcript is how many entries Transcript keeps, frames both ways and
	// the session's own events, each cut to Head bytes (default 256;
	// Stats.TranscriptDropped).
	Transcript int
	// Head is how many bytes of each frame the transcript and the junk
	// keep (default 512).
	Head int
	// ServerRequests and ServerRequestBytes bound the server-to-host
	// requests waiting for the WithServerRequests handler (defaults 64 and
	// 16 MiB). A request beyond either is dropped unanswered, counted in
	// Stats.ServerRequestsDropped and noted: a handler that never returns
	// cannot make the host hold the server's requests without bound. A
	// single request larger than ServerRequestBytes is still taken when
	// none waits.
	ServerRequests     int
	ServerRequestBytes int64
	// OverflowEndSession makes reaching the Notifications, Junk or
	// ServerRequests bounds end the session instead: every pending and
	// later request fails with an error wrapping ErrClosed that names the
	// bound, while stdout is still read and counted. It is for a test that
	// asserts "this server does not flood me"; by default a flood is
	// survived and counted.
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

// WithPipeCapacity sets the kernel buffer of the server's stdin and stdout
// pipes to n bytes (rounded up by the kernel to a power-of-two number of
// pages); 0 keeps the system's default. It works on Linux only; elsewhere
// Start fails with an error wrapping errors.ErrUnsupported. Small pipes make
// back-pressure appear with small responses; below 16 KiB (four pages) a
// writer blocked behind a few bytes may not look full (see
// pipes.EffectivelyFull), and WaitWriterBlocked then sees it only through
// the server's threads.
func WithPipeCapacity(n int) Option {
	return optionFunc(func(c *config) error {
		c.pipeCapacity = n
		return nonNegative("WithPipeCapacity", n, "the system's pipe size")
	})
}

// WithMaxFrame sets the transport limit: the most bytes one JSON-RPC
// message from the server may have on the wire, without its newline. A
// longer frame is discarded unparsed, in constant memory, and fails the
// request whose id it carries (found by scanning its bytes as they pass)
// with an error wrapping a *pipes.FrameTooLargeError. The default (and 0)
// is 16 MiB, as in the official Go SDK.
func WithMaxFrame(n int) Option {
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

// WithTimeout sets the bound of every wait that the caller does not bound
// more tightly by a context: waits for responses, writes to stdin, the
// handshake (see WithStartTimeout). The default (and 0) is 10s; StartServer
// also stays within the test deadline.
func WithTimeout(d time.Duration) Option {
	return durationOption("WithTimeout", d, defaultTimeout, func(c *config) *time.Duration { return &c.timeout })
}

// WithStartTimeout sets the bound of the waits of Start's handshake (the
// server/discover probe, within WithProbeTimeout's bound, and initialize)
// when d is longer than WithTimeout's bound; a shorter d, and 0 (the
// default), leave WithTimeout's bound. A server that is slow to start (a
// large binary, a JIT, a cold cache) is then not bounded by what bounds its
// answers later. Start's ctx and the test deadline still bound it. A
// negative d is an error from Start.
func WithStartTimeout(d time.Duration) Option {
	return durationOption("WithStartTimeout", d, 0, func(c *config) *time.Duration { return &c.startTimeout })
}

// WithGrace sets how long Close waits at each step of stopping the server
// (after closing stdin, after SIGTERM, after SIGQUIT and after SIGKILL),
// and for the server's stdout and stderr to close once it exited; the
// default (and 0) is 2s. It also bounds, before Close, how long the session
// waits for stdout to close after the server exited: past it, pending and
// later requests fail with an error naming what holds stdout open. A
// criterion that closes many sessions sets it lower; a server that saves
// state on EOF may need more. A negative d is an error from Start.
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

// WithProtocolVersion pins the protocol version (YYYY-MM-DD): no probe. A
// version of 2026-07-28 or later means the stateless era (no handshake,
// _meta on every request); an earlier one means the initialize handshake
// offering v. An empty v means negotiate, the default. A v not of the form
// YYYY-MM-DD is an error from Start.
func WithProtocolVersion(v string) Option {
	return optionFunc(func(c *config) error {
		if v != "" && !versionPattern.MatchString(v) {
			return fmt.Errorf("mcptest: WithProtocolVersion(%q): not a protocol revision (YYYY-MM-DD, e.g. %s)", v, wire.LatestVersion)
		}
		c.version = v
		return nil
	})
}

// WithoutHandshake makes Start send neither the probe nor initialize, for
// raw servers and for tests of the handshake itself: the session then
// speaks no era (no _meta; Ping sends ping; ProtocolVersion is "").
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

// WithStderr tees the server's stderr to w (for example a bytes.Buffer
// behind a mutex, or, from Go 1.25, t.Output()), from a goroutine of its
// own. The tee never slows the drain of stderr: when w falls more than 256
// chunks behind, chunks for w are dropped and counted in
// Stats.StderrTeeDropped. Stderr is always kept, bounded, in
// Session.Stderr (Diagnose shows its tail). Close waits for w at most the
// grace period.
func WithStderr(w io.Writer) Option {
	return optionFunc(func(c *config) error { c.stderr = w; return nil })
}
