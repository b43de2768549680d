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
// invalid value makes Start fail with an error that names the option.
type Option interface{ apply(*config) error }

type optionFunc func(*config) error

func (f optionFunc) apply(c *config) error { return f(c) }

// ServerRequestHandler answers a request the server sends to the host (in the
// legacy era: ping, roots/list, sampling/createMessage, …). It returns the
// result to send, or an error: a *wire.RPCError is sent as is, any other
// error as an internal error (-32603); a panic is recovered, answered with
// -32603 and reported by Close with its stack. Handlers run one at a time on
// a goroutine of their own, never on the stdout reader: a handler that
// blocks delays only later server requests (see Limits.ServerRequests);
// ctx ends when the session closes.
type ServerRequestHandler func(ctx context.Context, req *wire.Message) (result any, err error)

// Limits are the host's bounds on what it keeps of the server's output, and
// an Option that sets them. They
// bound memory, never traffic: a bound that is reached drops the oldest kept
// item, counts it in Stats and names it in Diagnose, and the session goes on
// (unless OverflowEndSession). Responses are never dropped: each reaches its
// Pending or is counted as late or unknown. A zero field means its default.
//
// With the defaults, the host holds at most about 16 MiB of notifications,
// 32 KiB of junk heads, 128 KiB of transcript heads and 16 MiB of server
// requests waiting for a handler, besides one frame of up to WithMaxFrame
// bytes being read: its heap is O(WithMaxFrame + these budgets) whatever the
// server writes.
type Limits struct {
	// Notifications and NotificationBytes bound the notifications kept for
	// WaitNotification (defaults 1024 and 16 MiB); beyond either, the
	// oldest go first (Stats.NotificationsDropped). Every notification is
	// counted in Stats.Notifications, kept or not.
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
	// cannot make the host hold the server's requests without bound.
	ServerRequests     int
	ServerRequestBytes int64
	// OverflowEndSession makes reaching the Notifications, Junk or
	// ServerRequests bounds end the session instead: every pending and later
	// request fails with an error wrapping ErrClosed that names the bound,
	// while stdout is still read and counted. It is for a test that asserts "this server
	// does not flood me"; by default a flood is survived and counted.
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
// pipes.EffectivelyFull).
func WithPipeCapacity(n int) Option {
	return optionFunc(func(c *config) error {
		c.pipeCapacity = n
		return nonNegative("WithPipeCapacity", n, "the system's pipe size")
	})
}

// WithMaxFrame sets the transport limit: the most bytes one JSON-RPC message
// from the server may have on the wire, without its newline. Longer frames
// are discarded unparsed and fail their request with a
// *pipes.FrameTooLargeError. The default (and 0) is 16 MiB, as in the
// official Go SDK.
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
// handshake. The default (and 0) is 10s; StartServer also stays within the
// test deadline.
func WithTimeout(d time.Duration) Option {
	return durationOption("WithTimeout", d, defaultTimeout, func(c *config) *time.Duration { return &c.timeout })
}

// WithGrace sets how long Close waits at each step of stopping the server:
// after closing stdin, after SIGTERM, after SIGQUIT and after SIGKILL, and
// how long the host waits for the server's stdout to close once the server
// has exited. The default (and 0) is 2s.
func WithGrace(d time.Duration) Option {
	return durationOption("WithGrace", d, defaultGrace, func(c *config) *time.Duration { return &c.grace })
}

// WithProbeTimeout sets how long negotiation waits for the answer to the
// server/discover probe before it takes the server for a legacy one and
// sends initialize. The default (and 0) is 5s, as in mcp-go's client. The
// bound includes the server's start-up time.
func WithProbeTimeout(d time.Duration) Option {
	return durationOption("WithProbeTimeout", d, defaultProbeTimeout, func(c *config) *time.Duration { return &c.probeTimeout })
}

var versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// WithProtocolVersion pins the protocol version (YYYY-MM-DD): no probe. A
// version of 2026-07-28 or later means the stateless era (no handshake,
// _meta on every request); an earlier one means the initialize handshake
// offering v. An empty v means negotiate, the default.
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
// raw servers: the session then speaks no era (no _meta; Ping sends ping).
func WithoutHandshake() Option {
	return optionFunc(func(c *config) error { c.noHandshake = true; return nil })
}

// WithServerRequests sets the handler for requests the server sends to the
// host. The default (and nil) answers ping with an empty result and
// everything else with -32601 (method not found). In the modern era a
// server request is a protocol violation: it is counted in
// Stats.ProtocolViolations and answered with -32601 without calling h.
func WithServerRequests(h ServerRequestHandler) Option {
	return optionFunc(func(c *config) error { c.serverRequests = h; return nil })
}

// WithStderr tees the server's stderr to w (for example a bytes.Buffer
// behind a mutex, or, from Go 1.25, t.Output()). The tee never slows the
// drain of stderr: when w falls more than 256 chunks behind, chunks for w
// are dropped and counted in Stats.StderrTeeDropped. Stderr is always kept,
// bounded, in Session.Stderr.
func WithStderr(w io.Writer) Option {
	return optionFunc(func(c *config) error { c.stderr = w; return nil })
}
